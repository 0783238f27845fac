import CInterop

/// What an nghttp2 callback reported, handed to the session's delegate.
///
/// Pointers (`name`, `value`, `bytes`) are valid only for the duration of the
/// delegate call; copy what must outlive it. `streamData` is the pointer set
/// with `HTTP2Session.setStreamData(_:for:)` (nil until then).
public enum HTTP2SessionEvent {
    /// A HEADERS frame began (request, response, push or trailers).
    case beginHeaders(streamID: Int32, category: HTTP2HeadersCategory)
    /// One decoded header field of a HEADERS frame.
    case header(
        streamID: Int32, streamData: UnsafeMutableRawPointer?, category: HTTP2HeadersCategory,
        name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
    /// END_HEADERS: the whole header block arrived.
    case headersComplete(streamID: Int32, streamData: UnsafeMutableRawPointer?, category: HTTP2HeadersCategory)
    /// Part of a DATA frame's payload (flow control already accounted).
    case dataChunk(streamID: Int32, streamData: UnsafeMutableRawPointer?, bytes: UnsafeRawBufferPointer)
    /// The peer ended its side of the stream (END_STREAM on HEADERS or DATA).
    case endStream(streamID: Int32, streamData: UnsafeMutableRawPointer?)
    /// The peer reset the stream.
    case resetReceived(streamID: Int32, streamData: UnsafeMutableRawPointer?, errorCode: UInt32)
    /// nghttp2 closed the stream (either side); stream data is cleared after this event.
    case streamClosed(streamID: Int32, streamData: UnsafeMutableRawPointer?, errorCode: UInt32)
    /// A SETTINGS frame (not an ack) arrived.
    case settings
    /// A PING (not an ack) arrived; nghttp2 answers it.
    case pingReceived
    /// A PING ack arrived, with the 8-byte payload we sent (big-endian).
    case pingAck(payload: UInt64)
    /// A GOAWAY arrived.
    case goaway(lastStreamID: Int32, errorCode: UInt32)
    /// We sent END_STREAM on this stream (HEADERS or DATA).
    case endStreamSent(streamID: Int32)
}

/// Which kind of header block a HEADERS frame carries.
public enum HTTP2HeadersCategory: Sendable, Equatable {
    case request, response, pushResponse, trailers

    init(_ category: nghttp2_headers_category) {
        switch category {
        case NGHTTP2_HCAT_REQUEST: self = .request
        case NGHTTP2_HCAT_RESPONSE: self = .response
        case NGHTTP2_HCAT_PUSH_RESPONSE: self = .pushResponse
        default: self = .trailers
        }
    }
}

/// The owner of an `HTTP2Session`: receives its events, on the session's thread.
public protocol HTTP2SessionDelegate: AnyObject {
    func http2Session(_ session: HTTP2Session, event: HTTP2SessionEvent)
}

/// A failed nghttp2 call: which one and nghttp2's error code.
public struct HTTP2SessionError: Error, CustomStringConvertible, Sendable, Equatable {
    public var operation: String
    public var code: Int32

    public init(_ operation: String, _ code: Int32) {
        self.operation = operation
        self.code = code
    }

    /// nghttp2's text for the code.
    public var reason: String { String(cString: nghttp2_strerror(code)) }

    public var isBadClientMagic: Bool { code == NGHTTP2_ERR_BAD_CLIENT_MAGIC.rawValue }

    public var description: String { "\(operation) failed: \(reason) (\(code))" }
}

/// Session options (read once, when the session is created).
public struct HTTP2SessionOptions: Sendable {
    /// Forget closed streams at once (gRPC and APNs never reprioritize).
    public var noClosedStreams = true
    /// RST_STREAM token bucket (burst, per second); rapid-reset protection (CVE-2023-44487).
    public var streamResetRateLimit: (burst: UInt64, rate: UInt64)?
    /// Most queued ack frames (SETTINGS/PING acks) before the session fails.
    public var maxOutboundAck: Int?
    /// Most entries in one SETTINGS frame.
    public var maxSettings: Int?
    /// Most CONTINUATION frames in one header block.
    public var maxContinuations: Int?

    public init() {}
}
