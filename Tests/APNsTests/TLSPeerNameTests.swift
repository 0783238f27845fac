import Testing
import TLSTransport

@Suite("TLS peer-name check fails closed")
struct TLSPeerNameTests {
    static let certificate = Result { try SelfSignedCertificate.generate() }

    func client() throws -> TLSContext {
        try TLSContext.client(trustedCAPEM: Self.certificate.get().certificatePEM)
    }

    /// Names OpenSSL refuses to check (cases, so test output shows no raw NUL).
    enum ImpossibleName: String, CaseIterable, Sendable {
        case bracketedIPv6, scopedIPv6, embeddedNUL, longerThanSNI

        var name: String {
            switch self {
            case .bracketedIPv6: "[::1]"  // not an IP literal OpenSSL parses
            case .scopedIPv6: "fe80::1%lo"  // likewise
            case .embeddedNUL: "api.push.apple.com\u{0}.evil.example"  // would otherwise be checked cut short
            case .longerThanSNI: String(repeating: "a", count: 250) + ".example"  // SNI allows 255 bytes
            }
        }
    }

    @Test("A name OpenSSL cannot check is refused before any handshake", arguments: ImpossibleName.allCases)
    func impossibleName(_ impossible: ImpossibleName) throws {
        let tls = try client()
        #expect {
            _ = try OpenSSLHandler(context: tls, serverName: impossible.name)
        } throws: { error in
            (error as? TLSError)?.kind == .peerName
        }
    }

    @Test("DNS names and IP literals are accepted", arguments: ["localhost", "api.sandbox.push.apple.com", "127.0.0.1", "::1"])
    func usableName(_ name: String) throws {
        _ = try OpenSSLHandler(context: try client(), serverName: name)
    }
}
