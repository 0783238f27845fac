import NIOCore
import Synchronization
import TLSTransport

/// Shared, locked state of one simulator: faults, records, waiters.
final class SimulatorState: Sendable {
    let configuration: APNsSimulatorConfiguration
    let verifier: PrivateKey?

    private struct Records {
        var deliveries: [APNsDelivery] = []
        var delivered = 0
        var perID: [String: Int] = [:]
        var statusCounts: [Int: Int] = [:]
        var tokenUpdates = 0
        var maxConcurrentStreams = 0
        var subscribers: [Int: AsyncStream<APNsDelivery>.Continuation] = [:]
        var eventSubscribers: [Int: AsyncStream<APNsSimulatorEvent>.Continuation] = [:]
        var nextSubscriber = 0
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let faults: Mutex<APNsSimulatorFaults>
    private let records = Mutex(Records())
    private let connectionIDs = Atomic<Int>(0)
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])

    init(configuration: APNsSimulatorConfiguration, verifier: PrivateKey?) {
        self.configuration = configuration
        self.verifier = verifier
        self.faults = Mutex(configuration.faults)
    }

    func nextConnectionID() -> Int { connectionIDs.add(1, ordering: .relaxed).newValue }
    func connectionsAccepted() -> Int { connectionIDs.load(ordering: .relaxed) }

    func track(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        channels.withLock { $0[key] = channel }
        channel.closeFuture.whenComplete { [self] _ in
            _ = channels.withLock { $0.removeValue(forKey: key) }
        }
    }

    func openChannels() -> [any Channel] { channels.withLock { Array($0.values) } }

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

    func countStatus(_ status: Int) {
        records.withLock { $0.statusCounts[status, default: 0] += 1 }
    }

    func observeConcurrentStreams(_ count: Int) {
        records.withLock { $0.maxConcurrentStreams = max($0.maxConcurrentStreams, count) }
    }

    func maxConcurrentStreamsSeen() -> Int { records.withLock { $0.maxConcurrentStreams } }

    func countTokenUpdate() { records.withLock { $0.tokenUpdates += 1 } }
    func tokenUpdates() -> Int { records.withLock { $0.tokenUpdates } }

    func record(_ delivery: APNsDelivery) {
        let (subscribers, ready) = records.withLock { records -> ([AsyncStream<APNsDelivery>.Continuation], [CheckedContinuation<Void, Never>]) in
            records.delivered += 1
            records.statusCounts[200, default: 0] += 1
            if configuration.recordDeliveries {
                records.deliveries.append(delivery)
                records.perID[delivery.apnsID, default: 0] += 1
            }
            var ready: [CheckedContinuation<Void, Never>] = []
            if !records.waiters.isEmpty {
                let delivered = records.delivered
                records.waiters.removeAll { waiter in
                    if waiter.count <= delivered {
                        ready.append(waiter.continuation)
                        return true
                    }
                    return false
                }
            }
            return (Array(records.subscribers.values), ready)
        }
        for subscriber in subscribers { subscriber.yield(delivery) }
        for continuation in ready { continuation.resume() }
    }

    func deliveries() -> [APNsDelivery] { records.withLock { $0.deliveries } }
    func deliveredCount() -> Int { records.withLock { $0.delivered } }
    func count(apnsID: String) -> Int { records.withLock { $0.perID[apnsID] ?? 0 } }
    func statusCountsSnapshot() -> [Int: Int] { records.withLock { $0.statusCounts } }

    func resetRecords() {
        records.withLock { records in
            records.deliveries = []
            records.delivered = 0
            records.perID = [:]
            records.statusCounts = [:]
            records.tokenUpdates = 0
        }
    }

    func subscribe() -> AsyncStream<APNsDelivery> { addSubscriber(\.subscribers) }

    func finishDeliveryStreams() {
        let subscribers = records.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.finish() }
    }
    func emit(_ event: APNsSimulatorEvent) {
        let subscribers = records.withLock { Array($0.eventSubscribers.values) }
        for subscriber in subscribers { subscriber.yield(event) }
    }

    func subscribeEvents() -> AsyncStream<APNsSimulatorEvent> { addSubscriber(\.eventSubscribers) }

    /// A new stream fed through the continuations at `list`, removed when the
    /// consumer stops.
    private func addSubscriber<Element>(
        _ list: any WritableKeyPath<Records, [Int: AsyncStream<Element>.Continuation]> & Sendable
    ) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream()
        let id = records.withLock { records in
            records.nextSubscriber += 1
            records[keyPath: list][records.nextSubscriber] = continuation
            return records.nextSubscriber
        }
        continuation.onTermination = { [self] _ in
            _ = records.withLock { $0[keyPath: list].removeValue(forKey: id) }
        }
        return stream
    }

    func waitFor(count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = records.withLock { records in
                if records.delivered >= count { return true }
                records.waiters.append((count, continuation))
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}
