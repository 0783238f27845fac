import HTTP2Core
import NIOCore

/// One request being received and answered on a simulator connection: the
/// part that does not depend on the adapter's request type. The connection
/// keeps its streams by this non-generic type, so looking one up per HTTP/2
/// event instantiates no generic metadata at run time (the connection's code
/// is not specialized for its adapter).
class SimulatorStreamBase {
    let id: Int32
    /// The response body as nghttp2's DATA source (kept alive until the stream closes).
    var response: HTTP2OutboundBody?
    /// Resets the stream if its request is not whole by the adapter's `requestTimeout`.
    var receiveTimer: Scheduled<Void>?

    init(id: Int32) { self.id = id }
}

/// A stream with the adapter's request being collected.
final class SimulatorStream<Request: SimulatorRequest>: SimulatorStreamBase {
    var request = Request()
}
