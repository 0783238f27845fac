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

    @Test func aTurnedAwayLaneIsPausedOnceUntilTheRouteAnswersOrThePauseRunsOut() {
        var route = RouteAdmission(limit: 1, queueLimit: 0, pauseFor: 1_000)
        #expect(route.admit(ticket: 1, now: 0) == .go)
        #expect(route.admit(ticket: 2, now: 0) == .full)
        #expect(route.pauseLane("a", now: 0) == 1_000)
        #expect(route.pauseLane("a", now: 500) == nil)  // paused already: the scheduler has it
        #expect(route.pauseLane("b", now: 500) == 1_500)
        #expect(route.pauseLane("a", now: 1_000) == 2_000)  // ran out (a hung route): paused again
        #expect(route.release(now: 1_200) == .resume([], lanes: ["a", "b"]))  // an answer: both resume
        #expect(route.pausedLanes.isEmpty)
        #expect(route.admit(ticket: 3, now: 1_300) == .go)
        #expect(route.admit(ticket: 4, now: 1_300) == .wait)  // progressing now: waits, no pause
        #expect(route.pauseLane("a", now: 1_300) == 2_300)
        #expect(route.release(now: 2_400) == .wake(4))  // that pause ran out already: nothing to resume
    }

    @Test func aRouteBusyWithoutAnAnswerPastStallAfterPausesNoLane() {
        var route = RouteAdmission(limit: 1, queueLimit: 0, stallAfter: 5_000, pauseFor: 1_000)
        #expect(route.admit(ticket: 1, now: 0) == .go)
        #expect(route.admit(ticket: 2, now: 4_000) == .full)
        #expect(route.pauseLane("a", now: 4_000) == 5_000)  // unanswered for 4 s: maybe slow, paused
        #expect(route.pauseLane("a", now: 5_000) == 6_000)
        #expect(route.pauseLane("a", now: 6_000) == nil)  // 6 s: hung; the lane's other routes go on
        #expect(route.pauseLane("b", now: 6_000) == nil)
        #expect(route.release(now: 7_000) == .resume([], lanes: []))  // it answers (the pauses ran out)
        #expect(route.admit(ticket: 3, now: 20_000) == .go)  // idle since: a new busy spell
        #expect(route.admit(ticket: 4, now: 20_000) == .full)
        #expect(route.pauseLane("a", now: 20_000) == 21_000)
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

    /// A simulator that answers nothing for `hung` topics, and one APNs
    /// route per bundle to it, on a manual APNs clock.
    struct Routes {
        let simulator: APNsSimulator
        let gateway: APNsGateway
        let apnsClock: ManualAPNsClock

        static func start(_ bundles: [(bundle: String, team: String)], hung: Set<String>, logger: Logger) async throws -> Routes {
            let apnsClock = ManualAPNsClock(start: Timestamp(timeIntervalSince1970: Double(RouteIsolationTests.due) / 1000))
            let key = try PrivateKey.generateP256()
            var simulatorConfiguration = APNsSimulatorConfiguration()
            simulatorConfiguration.publicKeyPEM = try key.publicKeyPEM()
            simulatorConfiguration.faults.hang = hung  // answers nothing for these topics
            let simulator = try await APNsSimulator.start(simulatorConfiguration)
            var routes: [APNsGateway.Route] = []
            for (bundle, team) in bundles {
                var configuration = APNsClientConfiguration(
                    endpoint: APNsEndpoint(host: simulator.host, port: simulator.port),
                    credentials: .token(keyID: "KEY\(team)", teamID: team, privateKeyPEM: try key.privateKeyPEM()))
                configuration.trustedCAPEM = simulator.caCertificatePEM
                configuration.clock = apnsClock
                configuration.responseTimeout = .seconds(30)
                routes.append(.init(bundleIDs: [bundle], environment: nil, client: try APNsClient(configuration: configuration, logger: logger)))
            }
            return Routes(simulator: simulator, gateway: APNsGateway(routes: routes), apnsClock: apnsClock)
        }

        /// Lets the `count` held requests time out (30 s) with the endpoint
        /// recovered: they are retried after a backoff pause and answered.
        func recover(held count: Int) async {
            await apnsClock.waitForTimers(count)
            apnsClock.advance(by: .seconds(30))
            await apnsClock.waitForSleepers(count)
            simulator.updateFaults { $0.hang = [] }  // the endpoint recovers
            apnsClock.advance(by: .seconds(1))  // full jitter: each pause is at most 1 s
        }

        func stop() async throws {
            await gateway.shutdown()
            try await simulator.stop()
        }
    }

    /// Stores `count` messages of `bundle` for one user with one device, due at `dueAt`.
    static func store(_ count: Int, of bundle: String, token: String, dueAt: Int64, in store: SQLiteStore) async throws
        -> [(id: String, dueAt: Int64, slot: DueSlot)]
    {
        _ = try await store.registerDevice(Device(
            bundleID: bundle, platform: .ios, userID: "u1", deviceToken: String(repeating: token, count: 32),
            locale: "en", timezone: "UTC", environment: .production, registeredAt: Self.due - 10_000))
        var entries: [(id: String, dueAt: Int64, slot: DueSlot)] = []
        for index in 0..<count {
            let key = "\(bundle)-\(index)"
            let message = StoredMessage(
                id: UUIDv7.make(now: Self.due), bundleID: bundle, platform: .ios, userID: "u1", campaignID: "c1",
                idempotencyKey: key, deliveryMethod: .traditional, abTest: false, windowStart: dueAt,
                windowEnd: dueAt + 3_600_000, dueAt: dueAt, request: DispatcherTests.requestBytes(bundle: bundle, key: key, ttl: nil),
                createdAt: dueAt - 1000)
            _ = try await store.schedule(message)
            entries.append((message.id, dueAt, DueSlot(lane: bundle)))
        }
        return entries
    }

    /// Waits until `count` requests are held by the simulator (unanswered).
    static func waitForHeld(_ count: Int, _ events: AsyncStream<APNsSimulatorEvent>) async {
        var held = 0
        for await event in events {
            if case .requestHeld = event { held += 1 }
            if held == count { break }
        }
    }

    @Test("A hung route fills only its own slots: the healthy route sends everything; then the hung requests time out and are retried")
    func hungRouteDoesNotDelayAHealthyOne() async throws {
        let directory = try makeTemporaryDirectory(prefix: "herald-routes")
        defer { removeTemporaryDirectory(directory) }
        let store = try SQLiteStore(path: "\(directory)/herald.sqlite")
        let logger = Logger(label: "test")
        let routes = try await Routes.start([(Self.hung, "TEAMHUNG01"), (Self.healthy, "TEAMOKAY01")], hung: [Self.hung], logger: logger)
        let simulator = routes.simulator
        let clock = ManualClock(now: Self.due)
        let scheduler = Scheduler(clock: clock, maxInFlight: 8, logger: logger)
        let dispatcher = Dispatcher(
            store: store, providers: routes.gateway.providers, clock: clock, scheduler: scheduler, logger: logger,
            routeLimits: .init(inFlight: 4, queue: 2), decode: StoredRequest.decode)

        // The hung route's messages come first.
        let entries = try await Self.store(30, of: Self.hung, token: "a1", dueAt: Self.due - 1_000, in: store)
            + Self.store(20, of: Self.healthy, token: "b2", dueAt: Self.due, in: store)
        let events = simulator.events()
        await scheduler.load(entries)
        let handOvers = Task { await dispatcher.run() }
        let run = Task { await scheduler.run { id, lease in await dispatcher.dispatch(id, lease: lease) } }

        // Every healthy message is delivered and SENT while the hung route holds its 4 requests.
        await simulator.waitForDeliveries(count: 20)
        #expect(simulator.delivered.allSatisfy { $0.header("apns-topic") == Self.healthy })
        try await Self.waitForState(store, .sent, count: 20)
        await Self.waitForHeld(4, events)
        #expect(try await store.countsByState()[.failed] == nil)

        // 30 s without an answer: the 4 streams are reset and retried after a backoff pause.
        await routes.recover(held: 4)
        await simulator.waitForDeliveries(count: 50)
        try await Self.waitForState(store, .sent, count: 50)
        let ids = simulator.delivered.map(\.apnsID)
        #expect(Set(ids).count == 50)  // each message delivered once
        await Self.stop(scheduler, run, dispatcher, handOvers)
        try await routes.stop()
        await store.close()
    }

    @Test("A burst on a route that has not answered yet is claimed about a batch at a time: its lane waits for the route's first answer")
    func aRouteWithoutAnAnswerPausesItsLaneInsteadOfChurningClaims() async throws {
        let directory = try makeTemporaryDirectory(prefix: "herald-routes")
        defer { removeTemporaryDirectory(directory) }
        let store = try SQLiteStore(path: "\(directory)/herald.sqlite")
        let logger = Logger(label: "test")
        let routes = try await Routes.start([(Self.hung, "TEAMHUNG01")], hung: [Self.hung], logger: logger)
        let simulator = routes.simulator
        let clock = ManualClock(now: Self.due)  // never moves: a lane's pause ends only by its route's answer
        let scheduler = Scheduler(clock: clock, maxInFlight: 8, logger: logger)
        let dispatcher = Dispatcher(
            store: store, providers: routes.gateway.providers, clock: clock, scheduler: scheduler, logger: logger,
            routeLimits: .init(inFlight: 4, queue: 2), decode: StoredRequest.decode)
        let count = 40
        let entries = try await Self.store(count, of: Self.hung, token: "a1", dueAt: Self.due, in: store)
        let events = simulator.events()
        await scheduler.load(entries)
        let handOvers = Task { await dispatcher.run() }
        let run = Task { await scheduler.run(batches: { ids, leases in await dispatcher.dispatch(batch: ids, leases: leases) }) }

        // A batch of 8: 4 sending (held), 2 waiting, the rest turned away
        // and given back; the lane is paused, so the scheduler stops
        // claiming (before the fix it claimed all 40 and gave 34 back).
        await Self.waitForHeld(4, events)
        while await scheduler.pendingCount > 0, await scheduler.earliestDue() ?? .max <= clock.now() { await Task.yield() }
        let pending = await scheduler.pendingCount
        #expect(pending >= count - 2 * 8, "the lane went on being claimed: \(count - pending) popped")

        // The route answers: the lane resumes (the scheduler's clock never
        // moved) and everything is delivered once.
        await routes.recover(held: 4)
        await simulator.waitForDeliveries(count: count)
        try await Self.waitForState(store, .sent, count: count)
        #expect(Set(simulator.delivered.map(\.apnsID)).count == count)
        var claims = 0
        for entry in entries { claims += try await store.message(id: entry.id)?.attempts ?? 0 }
        #expect(claims <= count + 2 * 8, "\(claims - count) messages claimed again")
        await Self.stop(scheduler, run, dispatcher, handOvers)
        try await routes.stop()
        await store.close()
    }

    @Test("A route busy for stallAfter without an answer counts as hung: it pauses its bundle no more, and the bundle's Android pushes go on")
    func aHungRouteStopsPausingItsLane() async throws {
        let iosToken = String(repeating: "c3", count: 32)
        let fcm = FakeFCMSender()
        let gateway = FakeAPNsGateway(fcm: fcm)
        gateway.hold(iosToken)  // the APNs route answers nothing
        let store = InMemoryStore()
        let logger = Logger(label: "test")
        let clock = ManualClock(now: Self.due)
        let scheduler = Scheduler(clock: clock, maxInFlight: 8, logger: logger)
        let dispatcher = Dispatcher(
            store: store, providers: gateway.providers, clock: clock, scheduler: scheduler, logger: logger,
            routeLimits: .init(inFlight: 2, queue: 0), decode: StoredRequest.decode)
        let bundle = FCMDispatchTests.bundle
        for (platform, token) in [(Platform.ios, iosToken), (.android, FCMDispatchTests.token)] {
            _ = try await store.registerDevice(Device(
                bundleID: bundle, platform: platform, userID: "u1", deviceToken: token, locale: "en", timezone: "UTC",
                environment: platform == .ios ? .production : nil, registeredAt: Self.due - 10_000))
        }
        // 60 iOS pushes first in the bundle's lane (8 a batch: more than 5 s of pauses' worth), then 2 Android
        // (within the FCM route's limit: a burst beyond it would pause the lane until FCM's first answer).
        var entries: [(id: String, dueAt: Int64, slot: DueSlot)] = []
        for (platform, count, dueAt) in [(Platform.ios, 60, Self.due), (.android, 2, Self.due + 1)] {
            for index in 0..<count {
                let key = "\(platform)-\(index)"
                let message = StoredMessage(
                    id: UUIDv7.make(now: Self.due), bundleID: bundle, platform: platform, userID: "u1", campaignID: "c1",
                    idempotencyKey: key, deliveryMethod: .traditional, abTest: false, windowStart: dueAt,
                    windowEnd: dueAt + 3_600_000, dueAt: dueAt, request: FCMDispatchTests.requestBytes(key: key, platform: platform),
                    createdAt: dueAt - 1000)
                _ = try await store.schedule(message)
                entries.append((message.id, dueAt, DueSlot(lane: bundle)))
            }
        }
        await scheduler.load(entries)
        let handOvers = Task { await dispatcher.run() }
        let run = Task { await scheduler.run(batches: { ids, leases in await dispatcher.dispatch(batch: ids, leases: leases) }) }

        // The first batch: 2 sending (held), 6 turned away; the lane pauses (the route may be slow).
        while true {
            let (pending, earliest) = (await scheduler.pendingCount, await scheduler.earliestDue() ?? .max)
            if pending <= 56 && earliest > clock.now() { break }
            await Task.yield()
        }
        // 6 s on, still no answer: hung. Its refusals pause nothing, and
        // the Android pushes behind them go without the clock moving again.
        clock.advance(to: Self.due + 6_000)
        while true {
            let (pending, earliest) = (await scheduler.pendingCount, await scheduler.earliestDue() ?? .max)
            if pending == 0 || earliest > clock.now() { break }
            await Task.yield()
        }
        try #require(await scheduler.pendingCount == 0, "the lane was paused again by a hung route")
        _ = await fcm.next(2)
        while try await store.countsByState()[.sent] ?? 0 < 2 { await Task.yield() }

        // The route recovers: everything is delivered once.
        for _ in 0..<60 { gateway.releaseOne() }
        while try await store.countsByState()[.sent] ?? 0 < 62 { await Task.yield() }
        #expect(Set(gateway.sent.map { $0.header("apns-id") }).count == 60)
        await Self.stop(scheduler, run, dispatcher, handOvers)
    }

    /// Stops a test's delivery: the scheduler (its dispatches in flight finish), then the hand-over log.
    static func stop(_ scheduler: Scheduler, _ run: Task<Void, Never>, _ dispatcher: Dispatcher, _ handOvers: Task<Void, Never>) async {
        await scheduler.stop()
        await run.value
        dispatcher.finish()
        await handOvers.value
    }

    /// Waits (yielding, never sleeping) until `count` messages are in `state`.
    static func waitForState(_ store: SQLiteStore, _ state: MessageState, count: Int) async throws {
        while try await store.countsByState()[state] ?? 0 < count { await Task.yield() }
    }
}
