public import Logging
public import NIOCore
import NIOPosix
public import TLSTransport

/// How a pool connects and paces itself.
@usableFromInline
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
///
/// Generic over the adapter only at its edge: ``init(settings:adapter:tls:group:logger:)``
/// and ``send(_:)`` are inlinable, so the adapter's module compiles them for
/// its own types; the slots, connections and requests behind them
/// (``HTTP2PoolCore``) are not generic, so a request instantiates no generic
/// metadata at run time.
@usableFromInline
package final class HTTP2ClientPool<Adapter: HTTP2ClientAdapter>: Sendable {
    /// What operators see of a pool, every slot summed.
    package typealias Status = HTTP2PoolStatus

    @usableFromInline package let settings: HTTP2PoolSettings
    @usableFromInline package let core: HTTP2PoolCore
    @usableFromInline package let adapter: Adapter

    @inlinable
    package init(settings: HTTP2PoolSettings, adapter: Adapter, tls: TLSContext, group: (any EventLoopGroup)?, logger: Logger) {
        self.settings = settings
        self.adapter = adapter
        core = HTTP2PoolCore(settings: settings, adapter: HTTP2ErasedAdapter(adapter), tls: tls, group: group, logger: logger)
    }

    /// Sends one request on the least-loaded slot; one attempt, no retries.
    /// Cancelling the calling task withdraws it (``HTTP2ClientError/cancelled``).
    @inlinable
    package func send(_ request: HTTP2ClientRequest) async throws(HTTP2ClientError) -> Adapter.Response {
        let slot = core.reserveSlot()
        defer { slot.release() }
        if Task.isCancelled { throw .cancelled }
        let promise = slot.eventLoop.makePromise(of: Adapter.Response.self)
        let adapter = self.adapter
        let pending = HTTP2PendingRequest(request: request, eventLoop: slot.eventLoop) { outcome in
            switch outcome {
            case .answered(let answer, let credential):
                let (response, retireConnection) = adapter.response(to: answer, credential: Self.typed(credential))
                promise.succeed(response)
                return retireConnection
            case .failed(let error):
                promise.fail(error)
                return false
            }
        }
        slot.submit(pending)
        do {
            return try await withTaskCancellationHandler {
                try await promise.futureResult.get()
            } onCancel: {
                slot.withdraw(pending)
            }
        } catch let error as HTTP2ClientError {
            throw error
        } catch {
            throw .connectionClosed("\(error)")
        }
    }

    /// The stream's credential as the adapter made it (``HTTP2ErasedAdapter``
    /// erased it; nothing else puts one there). Opened, not cast: a dynamic
    /// cast from `any Sendable` was ~800 instructions of the ~87,000 a
    /// notification costs the APNs client (callgrind, bench/apns-ir.sh).
    @inlinable
    static func typed(_ credential: (any Sendable)?) -> Adapter.Credential? {
        guard let credential else { return nil }
        func open<Value>(_ value: Value) -> Adapter.Credential {
            precondition(Value.self == Adapter.Credential.self, "a stream's credential comes from its pool's adapter")
            return unsafeBitCast(value, to: Adapter.Credential.self)
        }
        return open(credential)
    }

    /// Connections, streams, queue and last error of every slot.
    package func status() async -> Status {
        await core.status()
    }

    /// Closes every connection and fails queued requests with ``HTTP2ClientError/shutdown``.
    package func shutdown() async {
        await core.shutdown()
    }
}
