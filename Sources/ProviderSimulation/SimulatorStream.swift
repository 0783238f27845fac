import HTTP2Core
import NIOCore

/// One request being received and answered on a simulator connection.
final class SimulatorStream<Request: SimulatorRequest> {
    let id: Int32
    var request = Request()
    /// The response body as nghttp2's DATA source (kept alive until the stream closes).
    var response: HTTP2OutboundBody?
    /// Resets the stream if its request is not whole by the adapter's `requestTimeout`.
    var receiveTimer: Scheduled<Void>?

    init(id: Int32) { self.id = id }
}
