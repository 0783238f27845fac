#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether a listener given `host` binds only loopback addresses
/// (127.0.0.0/8, ::1, or ::ffff:127.0.0.0/104): the one test of "loopback"
/// in Herald (the open policy without tokens, plaintext without TLS).
///
/// Decided by address, never by the look of the text: an IP literal
/// (IPv4 dotted, IPv6, optionally in brackets) is parsed numerically
/// (`getaddrinfo` with `AI_NUMERICHOST`, as the bind resolves it); the name
/// `localhost` is resolved and counts only when every address it gives is
/// loopback. Every other name is not loopback, whatever it resolves to now:
/// a DNS answer can change between this check and the bind, so
/// `127.0.0.1.nip.io` or `127.anything.example` never count.
public func isLoopbackHost(_ host: String) -> Bool {
    var text = host
    if text.hasPrefix("["), text.hasSuffix("]"), text.count >= 2 { text = String(text.dropFirst().dropLast()) }
    guard !text.isEmpty, !text.utf8.contains(0) else { return false }
    if let numeric = resolvedAddresses(text, numericOnly: true) { return !numeric.isEmpty && numeric.allSatisfy { $0 } }
    guard text.lowercased() == "localhost" else { return false }
    guard let resolved = resolvedAddresses(text, numericOnly: false) else { return false }
    return !resolved.isEmpty && resolved.allSatisfy { $0 }
}

/// For each address `getaddrinfo` gives `host`: whether it is loopback;
/// nil when it does not resolve (or, with `numericOnly`, is no IP literal).
private func resolvedAddresses(_ host: String, numericOnly: Bool) -> [Bool]? {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    #if canImport(Glibc)
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    #else
    hints.ai_socktype = SOCK_STREAM
    #endif
    hints.ai_flags = numericOnly ? AI_NUMERICHOST : 0
    var list: UnsafeMutablePointer<addrinfo>?
    guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return nil }
    defer { freeaddrinfo(first) }
    var answers: [Bool] = []
    var cursor: UnsafeMutablePointer<addrinfo>? = first
    while let entry = cursor {
        answers.append(isLoopbackAddress(entry.pointee))
        cursor = entry.pointee.ai_next
    }
    return answers
}

private func isLoopbackAddress(_ entry: addrinfo) -> Bool {
    guard let address = entry.ai_addr else { return false }
    switch Int32(entry.ai_family) {
    case AF_INET:
        guard Int(entry.ai_addrlen) >= MemoryLayout<sockaddr_in>.size else { return false }
        let ipv4 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self)
        // s_addr is in network order: its first byte in memory is the first octet.
        return withUnsafeBytes(of: ipv4.sin_addr) { $0[0] == 127 }
    case AF_INET6:
        guard Int(entry.ai_addrlen) >= MemoryLayout<sockaddr_in6>.size else { return false }
        let ipv6 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self)
        return withUnsafeBytes(of: ipv6.sin6_addr) { bytes in
            let loopback: [UInt8] = Array(repeating: 0, count: 15) + [1]
            if bytes.elementsEqual(loopback) { return true }
            // IPv4-mapped ::ffff:127.x.y.z
            let mappedPrefix: [UInt8] = Array(repeating: 0, count: 10) + [0xff, 0xff]
            return bytes.prefix(12).elementsEqual(mappedPrefix) && bytes[12] == 127
        }
    default:
        return false
    }
}
