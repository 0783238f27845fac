import HeraldCore
import HeraldPrimitives
import HeraldStorage
import HeraldTestSupport
import Logging
import PushProviders
import Synchronization
import Testing

@testable import HeraldService

/// The provider seam from the dispatcher's side: a provider written only
/// against `PushProvider` (no APNs or FCM type) is all a platform needs, and
/// the dispatcher carries out its neutral results. Hostile cases first.
@Suite("Provider seam", .timeLimit(.minutes(1)))
struct ProviderSeamTests {
    static let bundle = "com.example.seam"
    static let due: Int64 = 1_800_000_000_000

    /// A third provider in memory: one route (admission identity) for every
    /// device, answering each token as told; records what it was asked.
    final class ScriptedProvider: PushProvider, PushRoute, Sendable {
        let platform: Platform
        let answers: [String: ProviderResult]
        let asked = Mutex<[(kind: ProviderPush.Kind, token: String, handOver: Bool)]>([])
        let refuseRoute: Bool

        init(platform: Platform, answers: [String: ProviderResult], refuseRoute: Bool = false) {
            self.platform = platform
            self.answers = answers
            self.refuseRoute = refuseRoute
        }

        var admission: ObjectIdentifier { ObjectIdentifier(self) }

        func route(bundleID: String, device: Device) -> Result<any PushRoute, NoRoute> {
            refuseRoute ? .failure(NoRoute("no scripted route for \(bundleID)")) : .success(self)
        }

        func missingRoute(bundleID: String) -> String? {
            refuseRoute ? "no scripted route for \(bundleID)" : nil
        }

        let shutdowns = Mutex(0)

        func shutdown() async { shutdowns.withLock { $0 += 1 } }

        func poolReports() async -> [ProviderPoolReport] {
            [ProviderPoolReport(
                platform: platform, service: "scripted-\(platform.rawValue)", route: "r", endpoint: "e", connectionsOpen: 1,
                streamsInFlight: 0, lastError: nil, lastErrorAt: nil, authFailures: [:], credentialsMinted: 0, bundleIDs: ["*"])]
        }

        func prepare(_ push: ProviderPush, for devices: [Device]) -> [any PreparedPush] {
            devices.map { device in Send(provider: self, kind: push.kind, token: device.deviceToken) }
        }

        struct Send: PreparedPush {
            let provider: ScriptedProvider
            let kind: ProviderPush.Kind
            let token: String

            func send(willHandOver: HandOverHook?) async -> ProviderResult {
                if let willHandOver {
                    let failure: (any Error)? = await withCheckedContinuation { continuation in
                        willHandOver { continuation.resume(returning: $0) }
                    }
                    if let failure { return .failed("hand-over: \(failure)") }
                }
                provider.asked.withLock { $0.append((kind, token, willHandOver != nil)) }
                return provider.answers[token] ?? .failed("no answer scripted")
            }
        }
    }

    struct Rig {
        let store = InMemoryStore()
        let clock = ManualClock(now: ProviderSeamTests.due)
        let dispatcher: Dispatcher
        let handOvers: Task<Void, Never>

        init(_ registry: ProviderRegistry) {
            let logger = Logger(label: "test")
            let dispatcher = Dispatcher(
                store: store, providers: registry, clock: clock, scheduler: Scheduler(clock: clock, logger: logger),
                logger: logger, decode: StoredRequest.decode)
            self.dispatcher = dispatcher
            handOvers = Task { await dispatcher.run() }
        }

        func close() async {
            dispatcher.finish()
            await handOvers.value
        }

        func register(_ token: String, registeredAt: Int64 = ProviderSeamTests.due - 10_000) async throws {
            _ = try await store.registerDevice(Device(
                bundleID: ProviderSeamTests.bundle, platform: .android, userID: "u1", deviceToken: token, locale: "en",
                timezone: "UTC", environment: nil, registeredAt: registeredAt))
        }

        func schedule(key: String) async throws -> StoredMessage {
            let message = StoredMessage(
                id: UUIDv7.make(now: ProviderSeamTests.due), bundleID: ProviderSeamTests.bundle, platform: .android,
                userID: "u1", campaignID: "c1", idempotencyKey: key, deliveryMethod: .traditional, abTest: false,
                windowStart: ProviderSeamTests.due, windowEnd: ProviderSeamTests.due + 3_600_000, dueAt: ProviderSeamTests.due,
                request: FCMDispatchTests.requestBytes(key: key, platform: .android), createdAt: ProviderSeamTests.due - 1000)
            guard case .scheduled(let stored, _) = try await store.schedule(message) else { throw FCMDispatchTests.Unexpected() }
            return stored
        }

        func devices() async throws -> [String] {
            try await store.devices(bundleID: ProviderSeamTests.bundle, platform: .android, userID: "u1").map(\.deviceToken).sorted()
        }
    }

    @Test func aPlatformWithNoProviderFailsItsDevicesWithTheReasonAndSendsNothing() async throws {
        let ios = ScriptedProvider(platform: .ios, answers: [:])
        let rig = Rig(ProviderRegistry().registering(ios))
        try await rig.register("t1")
        let stored = try await rig.schedule(key: "none")
        await rig.dispatcher.dispatch(stored.id)
        await rig.close()
        #expect(try await rig.store.message(id: stored.id)?.state == .failed)
        let outcomes = try await rig.store.outcomes(messageID: stored.id)
        #expect(outcomes.map(\.kind) == [.failed] && outcomes.first?.reason == "no provider for android")
        #expect(ios.asked.withLock { $0.isEmpty })
    }

    @Test func aProviderWithoutARouteFailsTheDeviceWithItsOwnReason() async throws {
        let rig = Rig(ProviderRegistry().registering(ScriptedProvider(platform: .android, answers: [:], refuseRoute: true)))
        try await rig.register("t1")
        let stored = try await rig.schedule(key: "unrouted")
        await rig.dispatcher.dispatch(stored.id)
        await rig.close()
        #expect(try await rig.store.outcomes(messageID: stored.id).first?.reason == "no scripted route for \(Self.bundle)")
        #expect(try await rig.devices() == ["t1"])  // no route drops nothing
    }

    @Test func aDropRemovesOnlyARegistrationOlderThanItsTime() async throws {
        let provider = ScriptedProvider(platform: .android, answers: [
            "old": .refused(.unregistered, reason: "gone", status: 404, attempts: 1, drop: .ifRegisteredBefore(Self.due)),
            "new": .refused(.unregistered, reason: "gone", status: 404, attempts: 1, drop: .ifRegisteredBefore(Self.due)),
            "kept": .refused(.rejected, reason: "quota", status: 429, attempts: 3),
        ])
        let rig = Rig(ProviderRegistry().registering(provider))
        try await rig.register("old")
        try await rig.register("new", registeredAt: Self.due + 1)  // re-registered after the verdict: a new token life
        try await rig.register("kept")
        let stored = try await rig.schedule(key: "drops")
        await rig.dispatcher.dispatch(stored.id)
        await rig.close()
        #expect(try await rig.devices() == ["kept", "new"])
        let outcomes = try await rig.store.outcomes(messageID: stored.id)
        #expect(Set(outcomes.map(\.kind)) == [.unregistered, .rejected])
        #expect(try await rig.store.message(id: stored.id)?.state == .failed)
    }

    @Test func aThirdProviderDeliversThroughTheSeamAndItsMessageIDIsStored() async throws {
        let provider = ScriptedProvider(platform: .android, answers: [
            "t1": .delivered(providerMessageID: "webpush/abc", attempts: 2),
        ])
        let lateness = Mutex<[Int64]>([])
        let rig = Rig(ProviderRegistry(lateness: { ms in lateness.withLock { $0.append(ms) } }).registering(provider))
        try await rig.register("t1")
        let stored = try await rig.schedule(key: "third")
        rig.clock.advance(to: Self.due + 250)
        await rig.dispatcher.dispatch(stored.id)
        await rig.close()
        let message = try #require(try await rig.store.message(id: stored.id))
        #expect(message.state == .sent && message.providerMessageID == "webpush/abc")
        let outcome = try #require(try await rig.store.outcomes(messageID: stored.id).first)
        #expect(outcome.kind == .sent && outcome.providerMessageID == "webpush/abc" && outcome.attempts == 2)
        let asked = provider.asked.withLock { $0 }
        #expect(asked.count == 1 && asked[0].kind == .alert && asked[0].token == "t1" && asked[0].handOver)
        #expect(lateness.withLock { $0 } == [250])
    }

    // Coverage, shutdown, pools and reload reach providers only through the seam.

    @Test func coverageWithNoProviderForThePlatformRefusesAndAProviderSaysWhyItHasNoRoute() {
        let unrouted = DeliveryCoverage(providers: ProviderRegistry().registering(
            ScriptedProvider(platform: .ios, answers: [:], refuseRoute: true)))
        let android = unrouted.missing(bundleID: "com.x", platform: .android)
        #expect(android?.contains("PLATFORM_ANDROID") == true && android?.contains("no provider") == true)
        let ios = unrouted.missing(bundleID: "com.x", platform: .ios)
        #expect(ios?.contains("PLATFORM_IOS") == true && ios?.contains("no scripted route for com.x") == true)
        #expect(ios?.hasSuffix("nothing was stored") == true)
        let routed = DeliveryCoverage(providers: ProviderRegistry().registering(ScriptedProvider(platform: .ios, answers: [:])))
        #expect(routed.missing(bundleID: "com.x", platform: .ios) == nil)
    }

    @Test func theRegistryShutsEveryProviderDownOnceAndReportsTheirPoolsInPlatformOrder() async {
        let ios = ScriptedProvider(platform: .ios, answers: [:])
        let android = ScriptedProvider(platform: .android, answers: [:])
        let registry = ProviderRegistry().registering(ios).registering(android)
        #expect(await registry.poolReports().map(\.service) == ["scripted-android", "scripted-ios"])
        await registry.shutdown()
        #expect(ios.shutdowns.withLock { $0 } == 1 && android.shutdowns.withLock { $0 } == 1)
    }

    @Test func aRouteReloadNamesAddedRemovedAndChangedRoutes() {
        let changes = PreparedRouteReload.changes(
            from: [(name: "a", identity: "1"), (name: "b", identity: "2"), (name: "c", identity: "3")],
            to: [(name: "b", identity: "2"), (name: "c", identity: "4"), (name: "e", identity: "5"), (name: "d", identity: "6")],
            prefix: "x_")
        #expect(changes == ["x_routes_added": "d;e", "x_routes_removed": "a", "x_routes_changed": "c"])
        let none = PreparedRouteReload.changes(from: [(name: "a", identity: "1")], to: [(name: "a", identity: "1")], prefix: "")
        #expect(none == ["routes_added": "none", "routes_removed": "none", "routes_changed": "none"])
    }
}
