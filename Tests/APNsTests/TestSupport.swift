import APNs
import APNsSimulator
import Foundation
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

    func sleep(for duration: Duration) async throws {
        if autoAdvance {
            state.withLock { state in
                state.sleeps.append(duration)
                state.now = state.now.addingTimeInterval(seconds(duration))
            }
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
        let due = state.withLock { state -> [CheckedContinuation<Void, Never>] in
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
            return due
        }
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
