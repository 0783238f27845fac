import Logging
import NIOCore
import NIOPosix
import TLSTransport

/// How a pool connects and paces itself.
struct FCMPoolSettings: Sendable {
    /// "FCM" or "OAuth token endpoint", for logs.
    var label: String
    var endpoint: FCMEndpoint
    var clock: any FCMClock
    var maxConnections: Int
    var maxConcurrentStreamsPerConnection: Int
    var responseTimeout: Duration
    var pingInterval: Duration
    var idleTimeout: Duration?
    var connectTimeout: Duration
    var reconnectBackoff: FCMBackoff
}

/// A pool of HTTP/2 + TLS (ALPN h2) connections to one endpoint: slots
/// picked least-loaded first, each with one accepting connection that
/// honours the peer's SETTINGS_MAX_CONCURRENT_STREAMS and queues beyond it.
final class FCMHTTP2Pool: Sendable {
    let settings: FCMPoolSettings
    private let slots: [FCMConnectionSlot]

    init(settings: FCMPoolSettings, tls: TLSContext, group: (any EventLoopGroup)?, logger: Logger) {
        self.settings = settings
        let shared = FCMPoolShared(settings: settings, tls: tls, logger: logger)
        let group = group ?? MultiThreadedEventLoopGroup.singleton
        slots = (0..<max(1, settings.maxConnections)).map { FCMConnectionSlot(index: $0, eventLoop: group.next(), shared: shared) }
    }

    /// Sends one request on the least-loaded slot; one attempt, no retries.
    func send(_ request: FCMHTTPRequest) async throws(FCMTransportError) -> FCMHTTPAnswer {
        let slot = leastLoadedSlot()
        slot.load.add(1, ordering: .relaxed)
        defer { slot.load.subtract(1, ordering: .relaxed) }
        let promise = slot.eventLoop.makePromise(of: FCMHTTPAnswer.self)
        let pending = FCMPendingRequest(request: request, promise: promise)
        slot.eventLoop.execute { slot.enqueue(pending) }
        do {
            return try await withTaskCancellationHandler {
                try await promise.futureResult.get()
            } onCancel: {
                slot.eventLoop.execute { slot.cancel(pending) }
            }
        } catch let error as FCMTransportError {
            throw error
        } catch {
            throw .connectionClosed("\(error)")
        }
    }

    private func leastLoadedSlot() -> FCMConnectionSlot {
        var best = slots[0]
        var bestLoad = best.load.load(ordering: .relaxed)
        for slot in slots.dropFirst() {
            let load = slot.load.load(ordering: .relaxed)
            if load < bestLoad {
                best = slot
                bestLoad = load
            }
        }
        return best
    }

    struct Status: Sendable {
        var open = 0
        var inFlight = 0
        var lastError: String?
    }

    func status() async -> Status {
        var status = Status()
        for slot in slots {
            guard let snapshot = try? await slot.eventLoop.submit({ slot.snapshot() }).get() else { continue }
            status.open += snapshot.open
            status.inFlight += snapshot.inFlight
            if let error = snapshot.lastError { status.lastError = error }
        }
        return status
    }

    func shutdown() async {
        for slot in slots {
            try? await slot.eventLoop.submit { slot.shutdown() }.get()
        }
    }
}
