package import HTTP2Core
package import TLSTransport

/// How one simulator connection collects a request's headers and body; each
/// provider keeps its own limits and the fields it needs.
package protocol SimulatorRequest: SendableMetatype {
    init()
    /// One header field; `trailer` when it arrived after the body.
    mutating func addHeader(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, trailer: Bool)
    /// One DATA chunk.
    mutating func addBody(_ bytes: UnsafeRawBufferPointer)
}

/// One answer: `:status`, the headers after it (`content-length` is added
/// when there is a body) and the body.
package struct SimulatorResponse: Equatable, Sendable {
    package var status: Int
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]

    package init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    package static func == (lhs: SimulatorResponse, rhs: SimulatorResponse) -> Bool {
        lhs.status == rhs.status && lhs.body == rhs.body && lhs.headers.elementsEqual(rhs.headers) { $0 == $1 }
    }
}

/// What the connection does with one complete request.
package enum SimulatorAction: Equatable, Sendable {
    /// Answer, `after` from now (zero: at once).
    case respond(SimulatorResponse, after: Duration)
    /// Never answer: the stream stays open until the client resets it or the
    /// connection closes (a hung endpoint).
    case hold
    /// Refuse the stream unprocessed (RST_STREAM REFUSED_STREAM) and send
    /// GOAWAY naming the streams before it; the connection closes once those
    /// are answered.
    case refuseWithGoAway
    /// Close the connection at once, the request unanswered.
    case drop
}

/// The HTTP/2 settings a simulator connection advertises.
package struct SimulatorSessionSettings: Sendable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    package var maxConcurrentStreams: Int
    /// SETTINGS_MAX_HEADER_LIST_SIZE, when advertised.
    package var maxHeaderListSize: Int?
    /// nghttp2's own limits.
    package var options = HTTP2SessionOptions()

    package init(maxConcurrentStreams: Int, maxHeaderListSize: Int? = nil, options: HTTP2SessionOptions = HTTP2SessionOptions()) {
        self.maxConcurrentStreams = maxConcurrentStreams
        self.maxHeaderListSize = maxHeaderListSize
        self.options = options
    }
}

/// One provider's rules over a ``SimulatorConnection``: the connection does
/// TLS, HTTP/2, stream bookkeeping, timers, GOAWAY and output; the adapter
/// says what each complete request gets. One value per connection, used on
/// its event loop only.
package protocol SimulatorAdapter: SendableMetatype {
    associatedtype Request: SimulatorRequest

    /// Advertised settings and nghttp2 options.
    var sessionSettings: SimulatorSessionSettings { get }
    /// A connection with nothing received for this long (and no stream open)
    /// is closed, GOAWAY first; nil: never.
    var idleTimeout: Duration? { get }
    /// A request not received whole (HEADERS to END_STREAM) by then is reset
    /// (CANCEL); nil: never.
    var requestTimeout: Duration? { get }
    /// Whether a request on a stream past a GOAWAY's last stream is reset
    /// REFUSED_STREAM (true) or left to nghttp2 (false).
    var resetsStreamsPastGoAway: Bool { get }

    /// The TLS handshake finished (the session starts next).
    mutating func handshakeCompleted(_ event: TLSHandshakeCompleted)
    /// The HTTP/2 session started.
    mutating func sessionStarted()
    /// A request stream began; true sends GOAWAY naming it as the last stream
    /// (asked until a GOAWAY was sent).
    mutating func streamBegan(streamID: Int32, streamsBegun: Int, openStreams: Int) -> Bool
    /// The whole request arrived.
    mutating func respond(to request: Request, streamID: Int32) -> SimulatorAction
    /// A PING (not an ACK) arrived.
    mutating func pingReceived()
    /// A GOAWAY arrived from the client.
    mutating func goAwayReceived()
    /// A connection whose session had started went away.
    mutating func connectionClosed()
}

extension SimulatorAdapter {
    package var idleTimeout: Duration? { nil }
    package var requestTimeout: Duration? { nil }
    package var resetsStreamsPastGoAway: Bool { true }
    package mutating func handshakeCompleted(_ event: TLSHandshakeCompleted) {}
    package mutating func sessionStarted() {}
    package mutating func streamBegan(streamID: Int32, streamsBegun: Int, openStreams: Int) -> Bool { false }
    package mutating func pingReceived() {}
    package mutating func goAwayReceived() {}
    package mutating func connectionClosed() {}
}
