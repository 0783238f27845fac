import Testing
import TLSTransport

@Suite("TLS peer-name check fails closed")
struct TLSPeerNameTests {
    static let certificate = Result { try SelfSignedCertificate.generate() }

    func client() throws -> TLSContext {
        try TLSContext.client(trustedCAPEM: Self.certificate.get().certificatePEM)
    }

    @Test("A name OpenSSL cannot check is refused before any handshake", arguments: [
        "[::1]",                                   // bracketed: not an IP literal OpenSSL parses
        "fe80::1%lo",                              // scoped IPv6: likewise
        "api.push.apple.com\u{0}.evil.example",   // embedded NUL: would otherwise be checked cut short
        String(repeating: "a", count: 250) + ".example",  // longer than SNI allows (255)
    ])
    func impossibleName(_ name: String) throws {
        let tls = try client()
        #expect {
            _ = try OpenSSLHandler(context: tls, serverName: name)
        } throws: { error in
            (error as? TLSError)?.kind == .peerName
        }
    }

    @Test("DNS names and IP literals are accepted", arguments: ["localhost", "api.sandbox.push.apple.com", "127.0.0.1", "::1"])
    func usableName(_ name: String) throws {
        _ = try OpenSSLHandler(context: try client(), serverName: name)
    }
}
