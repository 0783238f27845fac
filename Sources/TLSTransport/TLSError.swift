import CInterop

/// A TLS failure, with OpenSSL's own words for what went wrong.
public struct TLSError: Error, CustomStringConvertible, Sendable, Equatable {
    /// Which stage failed.
    public enum Kind: String, Sendable {
        /// The context (CA file, certificate, key) could not be set up.
        case configuration
        /// The handshake failed for a reason other than the peer's certificate.
        case handshakeFailed
        /// The peer's certificate did not verify against the trusted CAs or name.
        case certificateVerifyFailed
        /// The name the peer's certificate must match could not be set, so
        /// the connection is refused before its handshake starts.
        case peerName
        /// The peer did not agree to ALPN `h2`.
        case alpnNotNegotiated
        /// Reading or writing records after the handshake failed.
        case protocolError
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "TLS \(kind.rawValue): \(message)" }

    /// Drains OpenSSL's per-thread error queue into one line.
    public static func openSSLErrors() -> String {
        var lines: [String] = []
        var budget = 16
        while budget > 0 {
            budget -= 1
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            lines.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return lines.isEmpty ? "unknown OpenSSL error" : lines.joined(separator: "; ")
    }
}
