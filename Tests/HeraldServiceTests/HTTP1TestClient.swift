import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A blocking loopback socket speaking whatever a test writes: raw HTTP/1.1
/// (hostile on purpose) or a hand-built HTTP/2 Health/Check. Reads time out
/// after 10 s (a bound, not a wait: every read expects an answer or EOF).
final class HTTP1TestClient: @unchecked Sendable {
    private var fd: Int32
    private var buffer: [UInt8] = []

    /// One parsed response.
    struct Response {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        func header(_ name: String) -> String? { headers.first { $0.0 == name.lowercased() }?.1 }
    }

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HTTP1TestError("socket failed: errno \(errno)") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw HTTP1TestError("connect failed: errno \(errno)")
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Writes everything (false when the server closed first).
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// More bytes; false at EOF, on a reset or after the receive timeout.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
        if n <= 0 { return false }
        buffer += chunk[..<n]
        return true
    }

    /// True when the server has closed the connection (EOF or reset) with
    /// nothing more to read; false when bytes arrive or the read times out.
    func isClosedByServer() -> Bool {
        guard buffer.isEmpty else { return false }
        var chunk = [UInt8](repeating: 0, count: 4096)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
        if n > 0 { buffer += chunk[..<n]; return false }
        return n == 0 || errno == ECONNRESET
    }

    /// The next response (its body by `content-length`); nil at EOF.
    func readResponse() -> Response? {
        let separator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while headEnd == nil {
            if buffer.count >= 4 {
                for index in 0...(buffer.count - 4) where Array(buffer[index..<index + 4]) == separator {
                    headEnd = index
                    break
                }
            }
            if headEnd == nil, !fill() { return nil }
        }
        let lines = String(decoding: buffer[..<headEnd!], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        let length = headers.first { $0.0 == "content-length" }.flatMap { Int($0.1) } ?? 0
        let start = headEnd! + 4
        while buffer.count < start + length {
            if !fill() { return nil }
        }
        let body = Array(buffer[start..<start + length])
        buffer.removeFirst(start + length)
        return Response(status: status, headers: headers, body: body)
    }

    /// A gRPC Health/Check over HTTP/2 on this connection (which must not
    /// have sent anything yet), its preface written in `prefaceChunks`
    /// separate writes; true when the reply is SERVING.
    func healthCheckServing(prefaceChunks: Int = 1) -> Bool {
        let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        let size = (preface.count + prefaceChunks - 1) / prefaceChunks
        var offset = 0
        while offset < preface.count {
            send(Array(preface[offset..<min(preface.count, offset + size)]))
            offset += size
        }
        func frame(_ type: UInt8, _ flags: UInt8, _ stream: UInt8, _ payload: [UInt8]) -> [UInt8] {
            [UInt8(payload.count >> 16 & 0xFF), UInt8(payload.count >> 8 & 0xFF), UInt8(payload.count & 0xFF),
             type, flags, 0, 0, 0, stream] + payload
        }
        var block: [UInt8] = []
        for (name, value) in [(":method", "POST"), (":scheme", "http"), (":path", "/grpc.health.v1.Health/Check"),
                              (":authority", "localhost"), ("content-type", "application/grpc"), ("te", "trailers")] {
            block += [0x00, UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(value.utf8.count)] + Array(value.utf8)
        }
        send(frame(4, 0, 0, []) + frame(1, 0x4, 1, block) + frame(0, 0x1, 1, [0, 0, 0, 0, 0]))
        // Frames until the DATA of stream 1: HealthCheckResponse{status: SERVING} is 08 01.
        while true {
            while buffer.count < 9 || buffer.count < 9 + (Int(buffer[0]) << 16 | Int(buffer[1]) << 8 | Int(buffer[2])) {
                if !fill() { return false }
            }
            let length = Int(buffer[0]) << 16 | Int(buffer[1]) << 8 | Int(buffer[2])
            let type = buffer[3]
            let stream = buffer[8]
            let payload = Array(buffer[9..<9 + length])
            buffer.removeFirst(9 + length)
            if type == 0, stream == 1 { return payload == [0, 0, 0, 0, 2, 0x08, 0x01] }
        }
    }
}

struct HTTP1TestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
