import NIOCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A listener that could not be opened, said the way an operator reads it:
/// `cannot listen on 127.0.0.1:50051: Address already in use`.
public struct ListenError: Error, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var reason: String

    public init(host: String, port: Int, reason: String) {
        self.host = host
        self.port = port
        self.reason = reason
    }

    /// From a failed NIO bind: the errno's text, not NIO's syscall name.
    public init(host: String, port: Int, error: any Error) {
        let reason = if let io = error as? IOError { String(cString: strerror(io.errnoCode)) } else { "\(error)" }
        self.init(host: host, port: port, reason: reason)
    }

    public var description: String {
        let address = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]:\(port)" : "\(host):\(port)"
        return "cannot listen on \(address): \(reason)"
    }
}

/// Checks, before anything else starts, that `host:port` can be bound: the
/// address resolves, and a socket (with SO_REUSEADDR, as the listener
/// sets it) binds to it. The socket is closed at once; the listener binds
/// for real later (a port taken in between fails then, with the same error).
/// Port 0 (any free port) is not checked.
public func checkListenable(host: String, port: Int) throws(ListenError) {
    guard port != 0 else { return }
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    #if canImport(Glibc)
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    #else
    hints.ai_socktype = SOCK_STREAM
    #endif
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
    var list: UnsafeMutablePointer<addrinfo>?
    let resolved = getaddrinfo(host, String(port), &hints, &list)
    guard resolved == 0, let first = list else {
        throw ListenError(host: host, port: port, reason: "cannot resolve the host: \(String(cString: gai_strerror(resolved)))")
    }
    defer { freeaddrinfo(list) }
    let info = first.pointee
    let descriptor = socket(info.ai_family, info.ai_socktype, info.ai_protocol)
    guard descriptor >= 0 else { throw ListenError(host: host, port: port, reason: String(cString: strerror(errno))) }
    defer { _ = close(descriptor) }
    var one: Int32 = 1
    guard setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
        throw ListenError(host: host, port: port, reason: String(cString: strerror(errno)))
    }
    guard bind(descriptor, info.ai_addr, info.ai_addrlen) == 0 else {
        throw ListenError(host: host, port: port, reason: String(cString: strerror(errno)))
    }
}
