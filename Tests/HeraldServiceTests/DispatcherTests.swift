import APNsProvider
import FCMProvider
import APNsSimulation
import Foundation
import HeraldCore
import HeraldPrimitives
import HeraldProtos
import HeraldStorage
import Logging
import HeraldTestSupport
import Testing

@testable import HeraldService


/// The dispatcher against the real store (SQLite in a temp dir) and the real
/// bundled simulator (TLS, JWT), with a manual clock for the scheduler's time.
@Suite("Dispatcher", .timeLimit(.minutes(1)))
struct DispatcherTests {
    static let bundle = "com.example.dispatch"
    static let token = String(repeating: "c7", count: 32)
    static let due: Int64 = 1_800_000_000_000

    struct Rig {
        let store: SQLiteStore
        let gateway: APNsGateway
        let clock: ManualClock
        let dispatcher: Dispatcher
        let directory: String
        /// The dispatcher's hand-over log (`Dispatcher.run()`), as the delivery service runs it.
        let handOvers: Task<Void, Never>

        func close() async {
            dispatcher.finish()
            await handOvers.value
            await gateway.shutdown()
            await store.close()
            removeTemporaryDirectory(directory)
        }
    }

    static func rig(
        faults: APNsSimulatorFaults = APNsSimulatorFaults(), decode: @escaping StoredRequestDecoder = StoredRequest.decode
    ) async throws -> Rig {
        let directory = try makeTemporaryDirectory(prefix: "herald-dispatcher")
        let store = try SQLiteStore(path: "\(directory)/herald.sqlite")
        let logger = Logger(label: "test")
        let gateway = try await APNsGateway.embedded(faults: faults, logger: logger)
        let clock = ManualClock(now: due)
        let scheduler = Scheduler(clock: clock, logger: logger)
        let dispatcher = Dispatcher(
            store: store, providers: gateway.providers, clock: clock, scheduler: scheduler, logger: logger, decode: decode)
        let handOvers = Task { await dispatcher.run() }
        return Rig(store: store, gateway: gateway, clock: clock, dispatcher: dispatcher, directory: directory, handOvers: handOvers)
    }

    /// A stored traditional message due at `due`, from real ScheduleRequest bytes.
    static func schedule(_ rig: Rig, key: String, ttl: UInt32?) async throws -> StoredMessage {
        let bytes = requestBytes(bundle: bundle, key: key, ttl: ttl)
        let message = StoredMessage(
            id: UUIDv7.make(now: due), bundleID: bundle, platform: .ios, userID: "u1", campaignID: "c1",
            idempotencyKey: key, deliveryMethod: .traditional, abTest: false,
            windowStart: due, windowEnd: due + 3_600_000, dueAt: due, request: bytes, createdAt: due - 1000)
        guard case .scheduled(let stored, _) = try await rig.store.schedule(message) else {
            throw GRPCStatusForTest.unexpected
        }
        return stored
    }

    enum GRPCStatusForTest: Error { case unexpected }

    /// Real ScheduleRequest bytes for user u1, campaign c1: "Hello" / "World".
    static func requestBytes(bundle: String, key: String, ttl: UInt32?) -> [UInt8] {
        let arena = CArena()
        var request = Herald__V1__ScheduleRequest.initialized()
        request.bundle_id = arena.string(bundle)
        request.platform = HERALD__V1__PLATFORM__PLATFORM_IOS
        request.user_id = arena.string("u1")
        request.campaign_id = arena.string("c1")
        request.idempotency_key = arena.string(key)
        if let ttl {
            request.ttl_case = HERALD__V1__SCHEDULE_REQUEST__TTL_TTL_SECONDS
            request.ttl_seconds = ttl
        }
        request.content = arena.message(Herald__V1__Content.self) { content in
            content.title = arena.message(Herald__V1__LocalizedText.self) {
                $0.single_case = HERALD__V1__LOCALIZED_TEXT__SINGLE_TEXT
                $0.text = arena.string("Hello")
            }
            content.body = arena.message(Herald__V1__LocalizedText.self) {
                $0.single_case = HERALD__V1__LOCALIZED_TEXT__SINGLE_TEXT
                $0.text = arena.string("World")
            }
        }
        return withExtendedLifetime(arena) { ProtobufC.pack(&request) }
    }

    static func register(_ rig: Rig, token: String = token) async throws {
        _ = try await rig.store.registerDevice(Device(
            bundleID: bundle, platform: .ios, userID: "u1", deviceToken: token, locale: "en", timezone: "UTC",
            environment: .production, registeredAt: due - 10_000))
    }

    @Test func sendsWithExpirationZeroForTTLZero() async throws {
        let rig = try await Self.rig()
        defer { Task { await rig.close() } }
        try await Self.register(rig)
        let message = try await Self.schedule(rig, key: "now-or-never", ttl: 0)
        let deliveries = try #require(rig.gateway.simulator).deliveryStream()
        await rig.dispatcher.dispatch(message.id)
        var iterator = deliveries.makeAsyncIterator()
        let delivery = try #require(await iterator.next())
        #expect(delivery.header("apns-expiration") == "0")
        #expect(delivery.header("apns-priority") == "5")
        #expect(try await rig.store.message(id: message.id)?.state == .sent)
        let outcomes = try await rig.store.outcomes(messageID: message.id)
        #expect(outcomes.map(\.kind) == [.sent])
        #expect(outcomes.first?.providerMessageID == delivery.apnsID)
    }

    @Test func aMessageTooLateForItsTTLExpiresUnsent() async throws {
        let rig = try await Self.rig()
        defer { Task { await rig.close() } }
        try await Self.register(rig)
        let message = try await Self.schedule(rig, key: "late", ttl: 0)
        rig.clock.advance(to: Self.due + 120_000)  // two minutes late: "now or never" is never
        await rig.dispatcher.dispatch(message.id)
        let stored = try #require(try await rig.store.message(id: message.id))
        #expect(stored.state == .expired)
        #expect(stored.lastError?.contains("TTL") == true)
        #expect(rig.gateway.simulator?.deliveredCount == 0)
    }

    @Test func noDevicesEndsTheMessage() async throws {
        let rig = try await Self.rig()
        defer { Task { await rig.close() } }
        let message = try await Self.schedule(rig, key: "nobody", ttl: nil)
        await rig.dispatcher.dispatch(message.id)
        #expect(try await rig.store.message(id: message.id)?.state == .noDevices)
    }

    @Test func unregisteredTokenIsRemovedAndTheMessageFails() async throws {
        var faults = APNsSimulatorFaults()
        faults.unregistered[Self.token] = Self.due  // APNs saw it unregistered after it was registered
        let rig = try await Self.rig(faults: faults)
        defer { Task { await rig.close() } }
        try await Self.register(rig)
        let message = try await Self.schedule(rig, key: "gone", ttl: nil)
        await rig.dispatcher.dispatch(message.id)
        let stored = try #require(try await rig.store.message(id: message.id))
        #expect(stored.state == .failed)
        #expect(stored.lastError?.contains("Unregistered") == true)
        #expect(try await rig.store.outcomes(messageID: message.id).map(\.kind) == [.unregistered])
        #expect(try await rig.store.devices(bundleID: Self.bundle, platform: .ios, userID: "u1").isEmpty)
    }

    @Test func aStoredRequestThatDoesNotDecodeFailsTheMessageWithTheReason() async throws {
        struct Undecodable: Error, CustomStringConvertible {
            var description: String { "field 7 is not a ScheduleRequest field" }
        }
        let rig = try await Self.rig(decode: { _, _ in throw Undecodable() })
        defer { Task { await rig.close() } }
        try await Self.register(rig)
        let message = try await Self.schedule(rig, key: "garbled", ttl: nil)
        await rig.dispatcher.dispatch(message.id)
        let stored = try #require(try await rig.store.message(id: message.id))
        #expect(stored.state == .failed && !stored.isSending)
        #expect(stored.lastError == "stored request does not decode: field 7 is not a ScheduleRequest field")
        #expect(try await rig.store.outcomes(messageID: message.id).isEmpty)  // no device was tried
        #expect(rig.gateway.simulator?.deliveredCount == 0)
    }

    @Test func aCancelledMessageIsNotSent() async throws {
        let rig = try await Self.rig()
        defer { Task { await rig.close() } }
        try await Self.register(rig)
        let message = try await Self.schedule(rig, key: "cancel-me", ttl: nil)
        _ = try await rig.store.cancel(
            bundleID: Self.bundle, platform: .ios, userID: "u1", campaignID: "c1", idempotencyKey: "cancel-me",
            now: Self.due - 500)
        await rig.dispatcher.dispatch(message.id)
        #expect(try await rig.store.message(id: message.id)?.state == .cancelled)
        #expect(rig.gateway.simulator?.deliveredCount == 0)
    }

    @Test("After a crash: the resumed push skips the UNCONFIRMED device, sends the other, and ends SENT even if that one fails")
    func resumedPushSkipsDevicesHandedOverBeforeTheCrash() async throws {
        let other = String(repeating: "d4", count: 32)
        var faults = APNsSimulatorFaults()
        faults.badTokens = [other]  // the device never handed over is rejected when sent after the restart
        let rig = try await Self.rig(faults: faults)
        defer { Task { await rig.close() } }
        try await Self.register(rig)
        try await Self.register(rig, token: other)
        let message = try await Self.schedule(rig, key: "crashed", ttl: nil)
        // The "crash": claimed, handed over to APNs for one device, no answer.
        let claimed = try #require(try await rig.store.claim(id: message.id, from: .scheduled, now: Self.due))
        try await rig.store.recordHandOver(messageID: message.id, deviceToken: Self.token, push: try #require(claimed.pushStartedAt), at: Self.due)
        let recovery = try await rig.store.recoverInterrupted(now: Self.due + 1)
        #expect(recovery == InterruptedRecovery(resumed: [message.id], unconfirmedDevices: 1))

        rig.clock.advance(to: Self.due + 2)
        await rig.dispatcher.dispatch(message.id)
        #expect(rig.gateway.simulator?.deliveredCount == 0)  // the UNCONFIRMED device is never sent it again
        #expect(rig.gateway.simulator?.statusCounts[400] == 1)  // the other one was sent (and rejected)
        let stored = try #require(try await rig.store.message(id: message.id))
        #expect(stored.state == .sent && !stored.isSending)
        let outcomes = try await rig.store.outcomes(messageID: message.id)
        #expect(Dictionary(uniqueKeysWithValues: outcomes.map { ($0.deviceToken, $0.kind) })
            == [Self.token: .unconfirmed, other: .badDeviceToken])
    }
}
