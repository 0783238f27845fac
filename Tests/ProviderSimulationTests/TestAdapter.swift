import HTTP2Core
import NIOCore
import NIOEmbedded
import ProviderSimulation
@testable import TLSTransport

/// A request as the test adapter collects it.
struct CollectedTestRequest: SimulatorRequest {
    var headers: [(name: String, value: String)] = []
    var trailers = 0
    var body: [UInt8] = []

    init() {}

    mutating func addHeader(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, trailer: Bool) {
        if trailer {
            trailers += 1
        } else {
            headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
    }

    mutating func addBody(_ bytes: UnsafeRawBufferPointer) { body.append(contentsOf: bytes) }

    func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
}

/// What the adapter was told, and what it answers (by `:path`; default: 200
/// echoing the body with `x-path`).
final class AdapterLog {
    var events: [String] = []
    var requests: [CollectedTestRequest] = []
    var actions: [String: SimulatorAction] = [:]
}

/// A provider adapter for the tests: answers as ``AdapterLog`` says.
struct TestAdapter: SimulatorAdapter {
    let log: AdapterLog
    var goAwayAfterStreams: Int?
    var requestTimeout: Duration?
    var resetsStreamsPastGoAway = true

    var sessionSettings: SimulatorSessionSettings { SimulatorSessionSettings(maxConcurrentStreams: 10) }

    mutating func handshakeCompleted(_ event: TLSHandshakeCompleted) {
        log.events.append("handshake \(event.peerCertificateSubject ?? "-")")
    }
    mutating func sessionStarted() { log.events.append("started") }
    mutating func pingReceived() { log.events.append("ping") }
    mutating func goAwayReceived() { log.events.append("goaway") }
    mutating func connectionClosed() { log.events.append("closed") }

    mutating func streamBegan(streamID: Int32, streamsBegun: Int, openStreams: Int) -> Bool {
        log.events.append("began \(streamID) \(streamsBegun) \(openStreams)")
        return goAwayAfterStreams.map { streamsBegun >= $0 } ?? false
    }

    mutating func respond(to request: CollectedTestRequest, streamID: Int32) -> SimulatorAction {
        log.requests.append(request)
        let path = request.header(":path") ?? ""
        return log.actions[path]
            ?? .respond(SimulatorResponse(status: 200, headers: [("x-path", path)], body: request.body), after: .zero)
    }
}

/// What the client session saw.
final class ClientRecorder: HTTP2SessionDelegate {
    var headers: [Int32: [(String, String)]] = [:]
    var data: [Int32: [UInt8]] = [:]
    var closed: [Int32: UInt32] = [:]
    var goaways: [Int32] = []
    /// Request bodies, alive until the test ends (nghttp2 reads them while pumping).
    var bodies: [HTTP2OutboundBody] = []

    func http2Session(_ session: HTTP2Session, event: HTTP2SessionEvent) {
        switch event {
        case .header(let streamID, _, _, let name, let value):
            headers[streamID, default: []].append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        case .dataChunk(let streamID, _, let bytes):
            data[streamID, default: []].append(contentsOf: bytes)
        case .streamClosed(let streamID, _, let errorCode):
            closed[streamID] = errorCode
        case .goaway(let lastStreamID, _):
            goaways.append(lastStreamID)
        default:
            break
        }
    }

    func header(_ name: String, on streamID: Int32) -> String? {
        headers[streamID]?.last { $0.0 == name }?.1
    }
}

/// A ``SimulatorConnection`` over an EmbeddedChannel, after its TLS
/// handshake, talking to an nghttp2 client session in memory.
final class ConnectionRig {
    let channel = EmbeddedChannel()
    let log = AdapterLog()
    let recorder = ClientRecorder()
    let client: HTTP2Session

    init(handshake: Bool = true, configure: (inout TestAdapter) -> Void = { _ in }) throws {
        var adapter = TestAdapter(log: log)
        configure(&adapter)
        let connection = SimulatorConnection(adapter: adapter, eventLoop: channel.eventLoop)
        try channel.pipeline.syncOperations.addHandler(connection)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        client = try HTTP2Session(role: .client, delegate: recorder)
        try client.submitSettings([])
        if handshake { handshakeCompleted() }
    }

    /// What ``OpenSSLHandler`` sends up once the handshake finished.
    func handshakeCompleted() {
        channel.pipeline.fireUserInboundEventTriggered(
            TLSHandshakeCompleted(alpnProtocol: "h2", peerCertificateSubject: "CN=test client"))
    }

    /// Moves bytes both ways until neither side has anything to say (bounded).
    func pump() throws {
        for _ in 0..<100 {
            var moved = false
            var toServer = ByteBuffer()
            try client.drainOutput(into: &toServer)
            if toServer.readableBytes > 0, channel.isActive {
                try channel.writeInbound(toServer)
                moved = true
            }
            channel.embeddedEventLoop.run()
            while let fromServer = try channel.readOutbound(as: ByteBuffer.self) {
                if fromServer.readableBytes > 0 { try client.receive(fromServer) }
                moved = true
            }
            if !moved { return }
        }
    }

    /// Submits a request; `endStream` false leaves the body open.
    @discardableResult
    func request(path: String, body: [UInt8]? = nil, endStream: Bool = true) throws -> Int32 {
        // An unfinished body: nghttp2 waits for more, the stream stays open.
        let outbound = endStream ? body.map { HTTP2OutboundBody($0) } : HTTP2OutboundBody()
        if let outbound { recorder.bodies.append(outbound) }
        return try NGHTTP2Headers.with([
            (":method", "POST"), (":scheme", "https"), (":path", path), (":authority", "127.0.0.1"),
        ]) { headers, count in
            Result { () throws(HTTP2SessionError) in
                try client.submitRequest(headers: headers, count: count, body: outbound, streamData: nil)
            }
        }.get()
    }
}
