import APNsProvider
import FCMProvider
import APNs
import APNsSimulation
import Foundation
import HeraldCore
import HeraldPrimitives
import HeraldProtos
import HeraldStorage
import Logging
import NIOCore
import Synchronization
import HeraldTestSupport
import Testing
import TLSTransport

@testable import HeraldService

@Suite("Route admission (state machine)", .timeLimit(.minutes(1)))
struct RouteAdmissionTests {
    @Test func admitsUpToTheLimitQueuesBoundedlyThenTurnsAway() {
        var route = RouteAdmission(limit: 2, queueLimit: 1)
        #expect(route.admit(ticket: 1, now: 0) == .go)
        #expect(route.admit(ticket: 2, now: 0) == .go)
        #expect(route.admit(ticket: 3, now: 0) == .wait)
        #expect(route.admit(ticket: 4, now: 0) == .full)
        #expect(route.park("m4") == [])  // no room yet
        #expect(route.release(now: 0) == .wake(3, resume: ["m4"]))  // the slot goes to the waiter; the route progresses: m4 comes back
        #expect(route.release(now: 0) == .resume([]))  // nothing waits, nothing parked
        #expect(route.sending == 1)
    }

    @Test func aWithdrawnWaiterFreesItsPlace() {
        var route = RouteAdmission(limit: 1, queueLimit: 1)
        #expect(route.admit(ticket: 1, now: 0) == .go)
        #expect(route.admit(ticket: 2, now: 0) == .wait)
        let withdrawn = route.withdraw(ticket: 2)
        let again = route.withdraw(ticket: 2)
        #expect(withdrawn && !again)
        #expect(route.admit(ticket: 3, now: 0) == .wait)
        #expect(route.release(now: 0) == .wake(3))
    }

    @Test func aProgressingRouteMakesMessagesWaitAStalledOneSendsThemBack() {
        var route = RouteAdmission(limit: 1, queueLimit: 1, stallAfter: 5_000)
        #expect(route.admit(ticket: 1, now: 0) == .go)
        #expect(route.release(now: 100) == .resume([]))  // a send finished: progressing
        #expect(route.admit(ticket: 2, now: 200) == .go)
        for ticket in 3...6 { #expect(route.admit(ticket: ticket, now: 300) == .wait) }  // backpressure, no churn
        #expect(route.evictIfStalled(now: 5_100) == [])
        #expect(route.evictIfStalled(now: 5_101) == [4, 5, 6])  // stalled: all but queueLimit go back
        #expect(route.admit(ticket: 7, now: 5_102) == .full)
        #expect(route.release(now: 6_000) == .wake(3))
    }

    @Test func aParkedMessageComesBackOnceTheRouteProgressesEvenWhileOthersWait() {
        // A backlog released at once onto a route with no recent send: the
        // messages beyond the queue are parked; the route then progresses
        // and never empties its queue (new messages keep waiting).
        var route = RouteAdmission(limit: 1, queueLimit: 1)
        #expect(route.admit(ticket: 1, now: 0) == .go)
        #expect(route.admit(ticket: 2, now: 0) == .wait)
        #expect(route.admit(ticket: 3, now: 0) == .full)
        #expect(route.admit(ticket: 4, now: 0) == .full)
        #expect(route.park("m3") == [] && route.park("m4") == [])
        #expect(route.release(now: 10) == .wake(2, resume: ["m3"]))  // oldest first, queueLimit per release
        #expect(route.admit(ticket: 5, now: 11) == .wait)  // progressing: waits, never parked
        #expect(route.release(now: 20) == .wake(5, resume: ["m4"]))
        #expect(route.release(now: 30) == .resume([]))
        #expect(route.parked.isEmpty && route.sending == 0)
    }

    @Test func parkingWhenRoomCameMeanwhileReturnsItAtOnce() {
        var route = RouteAdmission(limit: 1, queueLimit: 0)
        #expect(route.admit(ticket: 1, now: 0) == .go)
        #expect(route.admit(ticket: 2, now: 0) == .full)
        #expect(route.release(now: 0) == .resume([]))  // freed before m2 was parked
        #expect(route.park("m2") == ["m2"])
    }
}

/// One hung APNs route next to a healthy one, through the real scheduler,
/// dispatcher, store and simulator (TLS, JWT); manual clocks for both the
/// scheduler and the APNs client, so nothing waits on real time.
@Suite("Route isolation", .timeLimit(.minutes(1)))
struct RouteIsolationTests {
    static let hung = "com.example.hung"
    static let healthy = "com.example.ok"
    static let due: Int64 = 1_800_000_000_000

    @Test("A hung route fills only its own slots: the healthy route sends everything; then the hung requests time out and are retried")
    func hungRouteDoesNotDelayAHealthyOne() async throws {
        let directory = try makeTemporaryDirectory(prefix: "herald-routes")
        defer { removeTemporaryDirectory(directory) }
        let store = try SQLiteStore(path: "\(directory)/herald.sqlite")
        let logger = Logger(label: "test")
        let apnsClock = ManualAPNsClock(start: Timestamp(timeIntervalSince1970: Double(Self.due) / 1000))

        let key = try PrivateKey.generateP256()
        var simulatorConfiguration = APNsSimulatorConfiguration()
        simulatorConfiguration.publicKeyPEM = try key.publicKeyPEM()
        simulatorConfiguration.faults.hang = [Self.hung]  // answers nothing for this topic
        let simulator = try await APNsSimulator.start(simulatorConfiguration)
        func client(team: String) throws -> APNsClient {
            var configuration = APNsClientConfiguration(
                endpoint: APNsEndpoint(host: simulator.host, port: simulator.port),
                credentials: .token(keyID: "KEY\(team)", teamID: team, privateKeyPEM: try key.privateKeyPEM()))
            configuration.trustedCAPEM = simulator.caCertificatePEM
            configuration.clock = apnsClock
            configuration.responseTimeout = .seconds(30)
            return try APNsClient(configuration: configuration, logger: logger)
        }
        let gateway = APNsGateway(routes: [
            .init(bundleIDs: [Self.hung], environment: nil, client: try client(team: "TEAMHUNG01")),
            .init(bundleIDs: [Self.healthy], environment: nil, client: try client(team: "TEAMOKAY01")),
        ])
        let clock = ManualClock(now: Self.due)
        let scheduler = Scheduler(clock: clock, maxInFlight: 8, logger: logger)
        let dispatcher = Dispatcher(
            store: store, providers: gateway.providers, clock: clock, scheduler: scheduler, logger: logger,
            routeLimits: .init(inFlight: 4, queue: 2), decode: StoredRequest.decode)

        var entries: [(id: String, dueAt: Int64, slot: DueSlot)] = []
        for (bundle, count, dueAt) in [(Self.hung, 30, Self.due - 1_000), (Self.healthy, 20, Self.due)] {
            _ = try await store.registerDevice(Device(
                bundleID: bundle, platform: .ios, userID: "u1", deviceToken: String(repeating: bundle == Self.hung ? "a1" : "b2", count: 32),
                locale: "en", timezone: "UTC", environment: .production, registeredAt: Self.due - 10_000))
            for index in 0..<count {
                let key = "\(bundle)-\(index)"
                let message = StoredMessage(
                    id: UUIDv7.make(now: Self.due), bundleID: bundle, platform: .ios, userID: "u1", campaignID: "c1",
                    idempotencyKey: key, deliveryMethod: .traditional, abTest: false, windowStart: dueAt,
                    windowEnd: dueAt + 3_600_000, dueAt: dueAt, request: DispatcherTests.requestBytes(bundle: bundle, key: key, ttl: nil),
                    createdAt: dueAt - 1000)
                _ = try await store.schedule(message)
                entries.append((message.id, dueAt, DueSlot(lane: bundle)))  // the hung route's messages come first
            }
        }
        let events = simulator.events()
        await scheduler.load(entries)
        let handOvers = Task { await dispatcher.run() }
        let run = Task { await scheduler.run { id, lease in await dispatcher.dispatch(id, lease: lease) } }

        // Every healthy message is delivered and SENT while the hung route holds its 4 requests.
        await simulator.waitForDeliveries(count: 20)
        #expect(simulator.delivered.allSatisfy { $0.header("apns-topic") == Self.healthy })
        try await Self.waitForState(store, .sent, count: 20)
        var held = 0
        for await event in events {
            if case .requestHeld = event { held += 1 }
            if held == 4 { break }
        }
        #expect(try await store.countsByState()[.failed] == nil)

        // 30 s without an answer: the 4 streams are reset and retried after a backoff pause.
        await apnsClock.waitForTimers(4)
        apnsClock.advance(by: .seconds(30))
        await apnsClock.waitForSleepers(4)
        simulator.updateFaults { $0.hang = [] }  // the endpoint recovers
        apnsClock.advance(by: .seconds(1))  // full jitter: each pause is at most 1 s
        await simulator.waitForDeliveries(count: 50)
        try await Self.waitForState(store, .sent, count: 50)
        let ids = simulator.delivered.map(\.apnsID)
        #expect(Set(ids).count == 50)  // each message delivered once
        await scheduler.stop()
        await run.value
        dispatcher.finish()
        await handOvers.value
        await gateway.shutdown()
        try await simulator.stop()
        await store.close()
    }

    /// Waits (yielding, never sleeping) until `count` messages are in `state`.
    static func waitForState(_ store: SQLiteStore, _ state: MessageState, count: Int) async throws {
        while try await store.countsByState()[state] ?? 0 < count { await Task.yield() }
    }
}
