import APNs
import APNsSimulation
import Foundation
import NIOCore
import Synchronization
import TLSTransport

/// A clock tests drive. With `autoAdvance`, `sleep` moves time forward at
/// once (and records the duration); otherwise sleepers wait for `advance`.
final class ManualClock: APNsClock, Sendable {
    private struct State {
        var now: EpochTime
        var sleeps: [Duration] = []
        var sleepers: [(wake: EpochTime, duration: Duration, continuation: CheckedContinuation<Void, Never>)] = []
        var sleeperWaiters: [CheckedContinuation<Duration, Never>] = []
        var unclaimed: [Duration] = []
        var timers: [(id: Int, fire: EpochTime, loop: any EventLoop, body: @Sendable () -> Void)] = []
        var nextTimer = 0
        var timerWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        /// Removes the timers due at `now`, to run outside the lock.
        mutating func dueTimers() -> [(loop: any EventLoop, body: @Sendable () -> Void)] {
            let now = self.now
            let due = timers.filter { $0.fire <= now }.map { (loop: $0.loop, body: $0.body) }
            timers.removeAll { $0.fire <= now }
            return due
        }
    }

    private let state: Mutex<State>
    let autoAdvance: Bool

    init(start: EpochTime = .now, autoAdvance: Bool) {
        state = Mutex(State(now: start))
        self.autoAdvance = autoAdvance
    }

    func now() -> EpochTime { state.withLock { $0.now } }

    /// Every duration slept so far.
    var sleeps: [Duration] { state.withLock { $0.sleeps } }

    /// Timers (response timeouts) fire only when this clock's time passes
    /// them: never by themselves, however long the test takes.
    func schedule(after duration: Duration, on loop: any EventLoop, _ body: @escaping @Sendable () -> Void) -> APNsTimer {
        let id = state.withLock { state in
            state.nextTimer += 1
            state.timers.append((state.nextTimer, state.now.addingTimeInterval(seconds(duration)), loop, body))
            let count = state.timers.count
            let ready = state.timerWaiters.filter { $0.count <= count }.map(\.continuation)
            state.timerWaiters.removeAll { $0.count <= count }
            return (state.nextTimer, ready)
        }
        for continuation in id.1 { continuation.resume() }
        return APNsTimer { [self, id = id.0] in state.withLock { $0.timers.removeAll { $0.id == id } } }
    }

    /// Returns once at least `count` timers wait to fire (streams in flight).
    func waitForTimers(count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if state.timers.count >= count { return true }
                state.timerWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    func sleep(for duration: Duration) async throws {
        if autoAdvance {
            let due = state.withLock { state in
                state.sleeps.append(duration)
                state.now = state.now.addingTimeInterval(seconds(duration))
                return state.dueTimers()
            }
            for timer in due { timer.loop.execute(timer.body) }
            return
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waiter = state.withLock { state -> CheckedContinuation<Duration, Never>? in
                state.sleeps.append(duration)
                state.sleepers.append((state.now.addingTimeInterval(seconds(duration)), duration, continuation))
                if state.sleeperWaiters.isEmpty {
                    state.unclaimed.append(duration)
                    return nil
                }
                return state.sleeperWaiters.removeFirst()
            }
            waiter?.resume(returning: duration)
        }
    }

    /// Waits until something sleeps on this clock; returns the duration asked for.
    func nextSleep() async -> Duration {
        await withCheckedContinuation { (continuation: CheckedContinuation<Duration, Never>) in
            let ready = state.withLock { state -> Duration? in
                if !state.unclaimed.isEmpty { return state.unclaimed.removeFirst() }
                state.sleeperWaiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Moves time forward, waking sleepers that are due.
    func advance(by duration: Duration) {
        let (due, timers) = state.withLock { state -> ([CheckedContinuation<Void, Never>], [(loop: any EventLoop, body: @Sendable () -> Void)]) in
            state.now = state.now.addingTimeInterval(seconds(duration))
            let now = state.now
            var due: [CheckedContinuation<Void, Never>] = []
            state.sleepers.removeAll { sleeper in
                if sleeper.wake <= now {
                    due.append(sleeper.continuation)
                    return true
                }
                return false
            }
            return (due, state.dueTimers())
        }
        for timer in timers { timer.loop.execute(timer.body) }
        for continuation in due { continuation.resume() }
    }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// A signing key for a test team, and the simulator config that trusts it.
struct TestKey {
    let keyID = "KEY1234567"
    let teamID = "TEAM123456"
    let privateKeyPEM: String
    let publicKeyPEM: String

    init() throws {
        let key = try PrivateKey.generateP256()
        privateKeyPEM = try key.privateKeyPEM()
        publicKeyPEM = try key.publicKeyPEM()
    }
}

let testCertificate: SelfSignedCertificate = {
    // One certificate for the whole suite: generation is cheap, but restarts need the same one.
    try! SelfSignedCertificate.generate()
}()

func simulatorConfiguration(_ key: TestKey, port: Int = 0) -> APNsSimulatorConfiguration {
    var configuration = APNsSimulatorConfiguration()
    configuration.port = port
    configuration.certificatePEM = testCertificate.certificatePEM
    configuration.keyPEM = testCertificate.keyPEM
    configuration.keyID = key.keyID
    configuration.teamID = key.teamID
    configuration.publicKeyPEM = key.publicKeyPEM
    configuration.allowedTopics = ["com.example.app", "com.example.app.voip"]
    return configuration
}

func clientConfiguration(_ key: TestKey, simulator: APNsSimulator, clock: (any APNsClock)? = nil) -> APNsClientConfiguration {
    var configuration = APNsClientConfiguration(
        endpoint: APNsEndpoint(host: "127.0.0.1", port: simulator.port),
        credentials: .token(keyID: key.keyID, teamID: key.teamID, privateKeyPEM: key.privateKeyPEM))
    configuration.trustedCAPEM = simulator.caCertificatePEM
    if let clock { configuration.clock = clock }
    return configuration
}

let deviceToken = String(repeating: "ab", count: 32)

func token(_ index: Int) -> String {
    String(repeating: String(format: "%02x", index % 256), count: 31) + String(format: "%02x", index / 256 % 256)
}

func alertRequest(
    token: String = deviceToken, priority: String = "10", pushType: String = "alert", topic: String? = "com.example.app",
    expiration: String = "0", collapseID: String? = nil, apnsID: String? = UUID().uuidString.lowercased(),
    payload: String = #"{"aps":{"alert":{"title":"Hi","body":"There"}}}"#, deadline: EpochTime? = nil
) -> APNsRequest {
    var headers: [(name: String, value: String)] = [("apns-push-type", pushType)]
    if let topic { headers.append(("apns-topic", topic)) }
    headers.append(("apns-priority", priority))
    headers.append(("apns-expiration", expiration))
    if let collapseID { headers.append(("apns-collapse-id", collapseID)) }
    if let apnsID { headers.append(("apns-id", apnsID)) }
    return APNsRequest(deviceToken: token, headers: headers, payload: Array(payload.utf8), deadline: deadline)
}
