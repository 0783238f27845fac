/// Where the client connects: `host:port` from `--addr` or HERALD_ADDRESS,
/// and whether (and how) it speaks TLS.
public struct ClientTarget: Sendable, Equatable {
    /// The port when the address names none (the server's default).
    public static let defaultPort = 50051
    /// The address when neither `--addr` nor HERALD_ADDRESS gives one.
    public static let defaultAddress = "127.0.0.1:50051"

    /// A DNS name or an IP address (IPv6 without brackets).
    public var host: String
    /// 1 to 65535.
    public var port: Int
    /// nil: cleartext HTTP/2 (h2c), as `herald serve` answers by default.
    public var tls: ClientTLS?

    /// A target; `tls` nil for cleartext h2c.
    public init(host: String, port: Int, tls: ClientTLS? = nil) {
        self.host = host
        self.port = port
        self.tls = tls
    }

    /// `host:port` as given back in messages (IPv6 in brackets).
    public var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Parses `host:port`, `[v6]:port`, or a bare host (port 50051).
    ///
    /// - Throws: a local ``ClientFailure`` naming what is wrong: empty, a
    ///   URL scheme, no host, a port that is not 1 to 65535.
    public static func parse(_ text: String) throws(ClientFailure) -> (host: String, port: Int) {
        let address = text.trimmingSpacesASCII()
        guard !address.isEmpty else { throw .local("the address is empty; give host:port, e.g. --addr 127.0.0.1:50051") }
        if address.contains("://") {
            throw .local("the address '\(text)' has a URL scheme; give host:port only, e.g. --addr 127.0.0.1:50051 (add --tls for TLS)")
        }
        guard address.utf8.count <= 261, !address.contains(where: { $0 == " " || $0 == "/" || $0 == "@" }) else {
            throw .local("'\(text)' is not an address; give host:port, e.g. --addr 127.0.0.1:50051")
        }
        var host: Substring
        var portText: Substring?
        if address.hasPrefix("[") {
            guard let close = address.firstIndex(of: "]") else { throw .local("the address '\(text)' has no closing ']'") }
            host = address[address.index(after: address.startIndex)..<close]
            let rest = address[address.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw .local("the address '\(text)' has text after ']' that is not :port") }
                portText = rest.dropFirst()
            }
        } else if address.filter({ $0 == ":" }).count > 1 {
            throw .local("the address '\(text)' looks like an IPv6 address; write it as [\(text)]:\(defaultPort)")
        } else if let colon = address.firstIndex(of: ":") {
            host = address[..<colon]
            portText = address[address.index(after: colon)...]
        } else {
            host = Substring(address)
        }
        guard !host.isEmpty else { throw .local("the address '\(text)' has no host; give host:port, e.g. 127.0.0.1:50051") }
        var port = defaultPort
        if let portText {
            guard !portText.isEmpty, portText.utf8.count <= 5, portText.allSatisfy(\.isASCIIDigit),
                  let value = Int(portText), (1...65535).contains(value) else {
                throw .local("the port in '\(text)' must be a number from 1 to 65535")
            }
            port = value
        }
        return (String(host), port)
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

extension String {
    func trimmingSpacesASCII() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars[first...last])
    }
}
