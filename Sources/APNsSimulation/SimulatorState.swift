import ProviderSimulation
import Synchronization
import TLSTransport

/// Shared, locked state of one simulator: faults, records, events, connections.
final class SimulatorState: Sendable {
    let configuration: APNsSimulatorConfiguration
    let verifier: PrivateKey?

    /// Deliveries (kept when `recordDeliveries`), the count and answers by status.
    let records: SimulatorRecords<APNsDelivery>
    /// The connections accepted.
    let channels = SimulatorChannels()

    /// Counters only APNs keeps beside the shared records.
    private struct Counters {
        var perID: [String: Int] = [:]
        var tokenUpdates = 0
        var maxConcurrentStreams = 0
    }

    private let faults: Mutex<APNsSimulatorFaults>
    private let counters = Mutex(Counters())
    private let eventSubscribers = SimulatorBroadcast<APNsSimulatorEvent>()

    init(configuration: APNsSimulatorConfiguration, verifier: PrivateKey?) {
        self.configuration = configuration
        self.verifier = verifier
        self.faults = Mutex(configuration.faults)
        self.records = SimulatorRecords(keep: configuration.recordDeliveries)
    }

    func updateFaults(_ body: (inout APNsSimulatorFaults) -> Void) { faults.withLock { body(&$0) } }
    func currentFaults() -> APNsSimulatorFaults { faults.withLock { $0 } }

    /// The fault (if any) for a valid request to `token`: status, reason, timestamp.
    func injectedFault(token: String) -> (Int, String, Int64?)? {
        faults.withLock { faults in
            if faults.badTokens.contains(token) { return (400, "BadDeviceToken", nil) }
            if let timestamp = faults.unregistered[token] { return (410, "Unregistered", timestamp) }
            if let remaining = faults.tooManyRequests[token], remaining != 0 {
                if remaining > 0 { faults.tooManyRequests[token] = remaining - 1 }
                return (429, "TooManyRequests", nil)
            }
            let serverError: (Int, String, Int64?) = faults.serverErrorStatus == 503
                ? (503, "ServiceUnavailable", nil) : (500, "InternalServerError", nil)
            if faults.failNext > 0 {
                faults.failNext -= 1
                return serverError
            }
            if faults.serverErrorRate > 0 && Double.random(in: 0..<1) < faults.serverErrorRate {
                return serverError
            }
            return nil
        }
    }

    func hangs(token: String, topic: String?) -> Bool {
        faults.withLock { faults in
            !faults.hang.isEmpty && (faults.hang.contains(token) || topic.map(faults.hang.contains) == true)
        }
    }

    func goAwayAfterStreams() -> Int? { faults.withLock { $0.goAwayAfterStreams } }
    func responseDelay() -> Duration { faults.withLock { $0.responseDelay } }

    func countStatus(_ status: Int) { records.countStatus(status) }

    func observeConcurrentStreams(_ count: Int) {
        counters.withLock { $0.maxConcurrentStreams = max($0.maxConcurrentStreams, count) }
    }

    func maxConcurrentStreamsSeen() -> Int { counters.withLock { $0.maxConcurrentStreams } }

    func countTokenUpdate() { counters.withLock { $0.tokenUpdates += 1 } }
    func tokenUpdates() -> Int { counters.withLock { $0.tokenUpdates } }

    /// Records an accepted notification (answered 200); its per-id count is
    /// in place before waiters wake.
    func record(_ delivery: APNsDelivery) {
        if records.keep { counters.withLock { $0.perID[delivery.apnsID, default: 0] += 1 } }
        records.record(delivery, status: 200)
    }

    func count(apnsID: String) -> Int { counters.withLock { $0.perID[apnsID] ?? 0 } }

    func resetRecords() {
        records.reset()
        counters.withLock { counters in
            counters.perID = [:]
            counters.tokenUpdates = 0
        }
    }

    func emit(_ event: APNsSimulatorEvent) { eventSubscribers.yield(event) }
    func subscribeEvents() -> AsyncStream<APNsSimulatorEvent> { eventSubscribers.subscribe() }
}
