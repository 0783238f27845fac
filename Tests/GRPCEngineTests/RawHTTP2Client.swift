#if canImport(Glibc)
import Glibc
#endif
@testable import GRPCEngine

/// A deliberately dumb HTTP/2 client over a blocking loopback socket: hand-built
/// frames (HPACK literals without indexing or Huffman), so tests can send what
/// well-behaved clients never would (RST_STREAM mid-call, streams beyond the limit).
final class RawHTTP2Client {
    struct Frame {
        var type: UInt8
        var flags: UInt8
        var streamID: UInt32
        var payload: [UInt8]
    }

    private var fd: Int32

    /// Connects to 127.0.0.1:`port` from `source` (another loopback
    /// address, e.g. 127.0.0.2, is another peer to the server).
    init(port: Int, from source: String? = nil) throws {
        fd = try loopbackSocket(port: port, from: source)
        send(Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8))
        sendFrame(type: 4, flags: 0, streamID: 0, payload: [])  // SETTINGS
    }

    /// Sends a PING and reads until its ACK: every frame sent before it has
    /// been processed by the server. Returns the frames read on the way; nil
    /// at EOF (or the 10 s receive timeout): the server closed the connection.
    func sync() -> [Frame]? {
        sendFrame(type: 6, flags: 0, streamID: 0, payload: [1, 2, 3, 4, 5, 6, 7, 8])
        var frames: [Frame] = []
        while let frame = readFrame() {
            if frame.type == 6, frame.flags & 0x1 != 0, frame.payload == [1, 2, 3, 4, 5, 6, 7, 8] { return frames }
            frames.append(frame)
        }
        return nil
    }

    /// HEADERS (END_HEADERS) with exactly `headers` (pseudo-headers included).
    func sendHeaders(streamID: UInt32, _ headers: [(String, String)], endStream: Bool = false) {
        var block: [UInt8] = []
        for (name, value) in headers {
            block.append(0x00)
            block.append(UInt8(name.utf8.count))
            block += Array(name.utf8)
            block.append(UInt8(value.utf8.count))
            block += Array(value.utf8)
        }
        sendFrame(type: 1, flags: 0x4 | (endStream ? 0x1 : 0), streamID: streamID, payload: block)
    }

    /// `bytes` as DATA frames of at most 16 KiB (the default frame size).
    func sendData(streamID: UInt32, _ bytes: [UInt8], endStream: Bool = false) {
        var offset = 0
        repeat {
            let end = min(bytes.count, offset + 16_384)
            sendFrame(type: 0, flags: endStream && end == bytes.count ? 0x1 : 0, streamID: streamID,
                      payload: Array(bytes[offset..<end]))
            offset = end
        } while offset < bytes.count
    }

    deinit { disconnect() }

    func disconnect() {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    /// While `batch` runs: what `send` would write, written at its end in one go.
    private var batched: [UInt8]?

    /// Sends everything `body` sends in one write (so that the server
    /// reads it, and nghttp2 parses it, in one go).
    func batch(_ body: () -> Void) {
        batched = []
        body()
        let bytes = batched ?? []
        batched = nil
        send(bytes)
    }

    func send(_ bytes: [UInt8]) {
        if batched != nil {
            batched! += bytes
            return
        }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    func sendFrame(type: UInt8, flags: UInt8, streamID: UInt32, payload: [UInt8]) {
        let length = payload.count
        send([UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags,
              UInt8(streamID >> 24 & 0x7F), UInt8(streamID >> 16 & 0xFF), UInt8(streamID >> 8 & 0xFF),
              UInt8(streamID & 0xFF)] + payload)
    }

    /// HEADERS (END_HEADERS) for a gRPC POST to `path`.
    func sendRequestHeaders(streamID: UInt32, path: String, extra: [(String, String)] = []) {
        var block: [UInt8] = []
        let headers = [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "localhost"),
                       ("content-type", "application/grpc"), ("te", "trailers")] + extra
        for (name, value) in headers {
            block.append(0x00)  // literal header field without indexing, new name
            block.append(UInt8(name.utf8.count))
            block += Array(name.utf8)
            block.append(UInt8(value.utf8.count))
            block += Array(value.utf8)
        }
        sendFrame(type: 1, flags: 0x4, streamID: streamID, payload: block)
    }

    func sendMessage(streamID: UInt32, _ message: [UInt8], endStream: Bool = true) {
        sendFrame(type: 0, flags: endStream ? 0x1 : 0, streamID: streamID, payload: GRPCMessageFramer.frame(message))
    }

    func sendReset(streamID: UInt32, errorCode: UInt32 = 8) {
        sendFrame(type: 3, flags: 0, streamID: streamID, payload: [
            UInt8(errorCode >> 24), UInt8(errorCode >> 16 & 0xFF), UInt8(errorCode >> 8 & 0xFF), UInt8(errorCode & 0xFF),
        ])
    }

    private var buffer: [UInt8] = []

    /// The next frame; nil at EOF or after the 10 s receive timeout.
    func readFrame() -> Frame? {
        while true {
            if buffer.count >= 9 {
                let length = Int(buffer[0]) << 16 | Int(buffer[1]) << 8 | Int(buffer[2])
                if buffer.count >= 9 + length {
                    let streamID = UInt32(buffer[5] & 0x7F) << 24 | UInt32(buffer[6]) << 16
                        | UInt32(buffer[7]) << 8 | UInt32(buffer[8])
                    let frame = Frame(type: buffer[3], flags: buffer[4], streamID: streamID,
                                      payload: Array(buffer[9..<(9 + length)]))
                    buffer.removeFirst(9 + length)
                    return frame
                }
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n <= 0 { return nil }
            buffer += chunk[..<n]
        }
    }
}

/// A blocking TCP socket connected to 127.0.0.1:`port`, bound first to
/// `source` when given; reads time out after 10 s.
func loopbackSocket(port: Int, from source: String? = nil) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw GRPCStatus(.unavailable, "socket failed: errno \(errno)") }
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    if let source {
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            close(fd)
            throw GRPCStatus(.unavailable, "bind to \(source) failed: errno \(errno)")
        }
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let rv = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard rv == 0 else {
        close(fd)
        throw GRPCStatus(.unavailable, "connect failed: errno \(errno)")
    }
    return fd
}
