import CInterop
import HTTP2Core
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

@testable import GRPCEngine

/// An nghttp2 client session over a blocking loopback socket: unlike
/// `RawHTTP2Client` it decodes the server's HPACK, so a test can read
/// `grpc-status` and `grpc-message` of calls it holds open on purpose.
final class H2LoopbackClient {
    final class Recorder: HTTP2SessionDelegate {
        var headers: [Int32: [(String, String)]] = [:]
        var data: [Int32: [UInt8]] = [:]
        var closed: [Int32: UInt32] = [:]
        var goaways = 0
        var pingAcks = 0

        func http2Session(_ session: HTTP2Session, event: HTTP2SessionEvent) {
            switch event {
            case .header(let streamID, _, _, let name, let value):
                headers[streamID, default: []].append(
                    (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
            case .dataChunk(let streamID, _, let bytes):
                data[streamID, default: []].append(contentsOf: bytes)
            case .streamClosed(let streamID, _, let errorCode):
                closed[streamID] = errorCode
            case .goaway:
                goaways += 1
            case .pingAck:
                pingAcks += 1
            default:
                break
            }
        }
    }

    private var fd: Int32
    let recorder = Recorder()
    let session: HTTP2Session
    /// Request bodies, alive until the client goes (nghttp2 reads them).
    private var bodies: [Int32: HTTP2OutboundBody] = [:]
    private(set) var eof = false

    init(port: Int, from source: String? = nil) throws {
        fd = try loopbackSocket(port: port, from: source)
        session = try HTTP2Session(role: .client, delegate: recorder)
        try session.submitSettings([])
        flush()
    }

    deinit { disconnect() }

    func disconnect() {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    /// Starts a gRPC POST to `path`. `body` bytes go out as given (frame them
    /// with `GRPCMessageFramer.frame`, or declare more than is sent); the
    /// stream ends after them unless `open`.
    @discardableResult
    func start(_ path: String, body bytes: [UInt8], open: Bool = false, extra: [(String, String)] = []) throws -> Int32 {
        let body = HTTP2OutboundBody()
        body.enqueue(bytes, prefixed: false)
        if !open { body.finish(trailers: nil) }
        let headers = [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "localhost"),
                       ("content-type", "application/grpc"), ("te", "trailers")] + extra
        let id = try NGHTTP2Headers.with(headers) { headers, count in
            Result { () throws(HTTP2SessionError) in
                try session.submitRequest(headers: headers, count: count, body: body, streamData: nil)
            }
        }.get()
        bodies[id] = body
        flush()
        return id
    }

    /// A whole unary request message on a new stream.
    @discardableResult
    func call(_ path: String, message: [UInt8], extra: [(String, String)] = []) throws -> Int32 {
        try start(path, body: GRPCMessageFramer.frame(message), extra: extra)
    }

    /// Writes what the session has to send.
    func flush() {
        guard fd >= 0 else { return }
        while let chunk = try? session.nextOutput(), chunk.count > 0 {
            var offset = 0
            while offset < chunk.count {
                let n = Glibc.send(fd, chunk.baseAddress! + offset, chunk.count - offset, Int32(MSG_NOSIGNAL))
                if n <= 0 { return }
                offset += n
            }
        }
    }

    /// Reads and handles until `done` holds; false at EOF, on a read error or
    /// the socket's 10 s receive timeout.
    func pump(until done: () -> Bool) -> Bool {
        while true {
            flush()  // (sending may be what `done` waits for: a stream closes on our RST_STREAM)
            if done() { return true }
            guard fd >= 0, !eof else { return false }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n <= 0 {
                eof = true
                return false
            }
            var buffer = ByteBuffer()
            buffer.writeBytes(chunk[..<n])
            do { try session.receive(buffer) } catch { return false }
        }
    }

    /// PING and its ACK: everything sent before has been processed by the server.
    func sync() -> Bool {
        let before = recorder.pingAcks
        do { try session.submitPing(payload: 42) } catch { return false }
        return pump { recorder.pingAcks > before }
    }

    /// Waits until the stream closed (answered or reset).
    func wait(_ stream: Int32) -> Bool { pump { recorder.closed[stream] != nil } }

    func header(_ name: String, on stream: Int32) -> String? {
        recorder.headers[stream]?.last { $0.0 == name }?.1
    }

    /// The call's grpc-status (from Trailers-Only or trailers), nil without one.
    func grpcStatus(_ stream: Int32) -> Int? { header("grpc-status", on: stream).flatMap { Int($0) } }

    /// The call's grpc-message, percent-decoded.
    func grpcMessage(_ stream: Int32) -> String {
        (header("grpc-message", on: stream) ?? "").removingPercentEncodingLossy
    }
}

extension String {
    /// `%XX` sequences decoded (grpc-message's encoding); anything else kept.
    var removingPercentEncodingLossy: String {
        var bytes: [UInt8] = []
        let utf8 = Array(self.utf8)
        var index = 0
        while index < utf8.count {
            if utf8[index] == UInt8(ascii: "%"), index + 2 < utf8.count,
               let value = UInt8(String(decoding: utf8[(index + 1)...(index + 2)], as: UTF8.self), radix: 16) {
                bytes.append(value)
                index += 3
            } else {
                bytes.append(utf8[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
