package import Logging
package import NIOCore
import NIOPosix
package import TLSTransport

/// How a pool connects and paces itself.
package struct HTTP2PoolSettings: Sendable {
    /// "APNs", "FCM" or "OAuth token endpoint", for logs.
    package var label: String
    package var host: String
    package var port: Int
    package var clock: any ProviderClock
    /// Slots (connections accepting streams), opened lazily, least-loaded first.
    package var maxConnections: Int
    /// Local cap on streams per connection (the peer's SETTINGS_MAX_CONCURRENT_STREAMS also applies).
    package var maxConcurrentStreamsPerConnection: Int
    /// A stream with no answer this long is reset (``HTTP2ClientError/responseTimeout``).
    package var responseTimeout: Duration
    /// PING a connection quiet this long; close it if unanswered by the next tick.
    package var pingInterval: Duration
    /// Retire a connection with no streams for this long (nil: keep it, PINGing).
    package var idleTimeout: Duration?
    /// TCP + TLS connect timeout.
    package var connectTimeout: Duration
    /// Reconnect pacing after failed connects.
    package var reconnectBackoff: ProviderBackoff

    package init(
        label: String, host: String, port: Int, clock: any ProviderClock, maxConnections: Int,
        maxConcurrentStreamsPerConnection: Int, responseTimeout: Duration, pingInterval: Duration,
        idleTimeout: Duration?, connectTimeout: Duration, reconnectBackoff: ProviderBackoff
    ) {
        self.label = label
        self.host = host
        self.port = port
        self.clock = clock
        self.maxConnections = maxConnections
        self.maxConcurrentStreamsPerConnection = maxConcurrentStreamsPerConnection
        self.responseTimeout = responseTimeout
        self.pingInterval = pingInterval
        self.idleTimeout = idleTimeout
        self.connectTimeout = connectTimeout
        self.reconnectBackoff = reconnectBackoff
    }

    /// `host:port`, for logs and errors.
    var endpointDescription: String { "\(host):\(port)" }
}

/// A pool of HTTP/2 + TLS (ALPN h2) connections to one endpoint for one
/// provider: slots picked least-loaded first, each with one accepting
/// connection that honours the peer's SETTINGS_MAX_CONCURRENT_STREAMS and
/// queues beyond it, PING keep-alive, GOAWAY draining, reconnect backoff,
/// response timeouts and deadlines. One attempt per ``send(_:)``: the
/// provider client decides what to retry.
package final class HTTP2ClientPool<Adapter: HTTP2ClientAdapter>: Sendable {
    package let settings: HTTP2PoolSettings
    private let shared: HTTP2PoolShared<Adapter>
    private let slots: [HTTP2ClientSlot<Adapter>]

    package init(settings: HTTP2PoolSettings, adapter: Adapter, tls: TLSContext, group: (any EventLoopGroup)?, logger: Logger) {
        self.settings = settings
        let shared = HTTP2PoolShared(settings: settings, adapter: adapter, tls: tls, logger: logger)
        self.shared = shared
        let group = group ?? MultiThreadedEventLoopGroup.singleton
        slots = (0..<max(1, settings.maxConnections)).map { HTTP2ClientSlot(index: $0, eventLoop: group.next(), shared: shared) }
    }

    /// Sends one request on the least-loaded slot; one attempt, no retries.
    /// Cancelling the calling task withdraws it (``HTTP2ClientError/cancelled``).
    package func send(_ request: HTTP2ClientRequest) async throws(HTTP2ClientError) -> Adapter.Response {
        let slot = leastLoadedSlot()
        slot.load.add(1, ordering: .relaxed)
        defer { slot.load.subtract(1, ordering: .relaxed) }
        if Task.isCancelled { throw .cancelled }
        let promise = slot.eventLoop.makePromise(of: Adapter.Response.self)
        let pending = HTTP2PendingRequest<Adapter>(request: request, promise: promise)
        slot.eventLoop.execute { slot.enqueue(pending) }
        do {
            return try await withTaskCancellationHandler {
                try await promise.futureResult.get()
            } onCancel: {
                slot.eventLoop.execute { slot.cancel(pending) }
            }
        } catch let error as HTTP2ClientError {
            throw error
        } catch {
            throw .connectionClosed("\(error)")
        }
    }

    private func leastLoadedSlot() -> HTTP2ClientSlot<Adapter> {
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

    /// What operators see of a pool, every slot summed.
    package struct Status: Sendable, Equatable {
        /// Connections established (ready or draining).
        package var open = 0
        /// Streams waiting for a response.
        package var inFlight = 0
        /// Requests queued locally beyond the streams allowed.
        package var queued = 0
        /// The last connection-level error, if any.
        package var lastError: String?
        /// Reconnect delays waited so far, every slot.
        package var reconnectDelays: [Duration] = []
    }

    /// Connections, streams, queue and last error of every slot.
    package func status() async -> Status {
        var status = Status()
        for slot in slots {
            guard let snapshot = try? await slot.eventLoop.submit({ slot.snapshot() }).get() else { continue }
            status.open += snapshot.open
            status.inFlight += snapshot.inFlight
            status.queued += snapshot.queued
            status.reconnectDelays += snapshot.reconnectDelays
            if let error = snapshot.lastError { status.lastError = error }
        }
        return status
    }

    /// Closes every connection and fails queued requests with ``HTTP2ClientError/shutdown``.
    package func shutdown() async {
        for slot in slots {
            try? await slot.eventLoop.submit { slot.shutdown() }.get()
        }
    }
}
