import HeraldPrimitives
import Testing

@Suite("isLoopbackHost")
struct LoopbackHostTests {
    /// Decided by the address, never by how the text starts: names other
    /// than `localhost` never count, whatever DNS says today.
    @Test("loopback by address", arguments: [
        ("127.0.0.1", true), ("127.5.6.7", true), ("127.255.255.254", true), ("::1", true), ("[::1]", true),
        ("localhost", true), ("LocalHost", true), ("::ffff:127.0.0.1", true),
        ("0.0.0.0", false), ("::", false), ("[::]", false), ("127.anything.example", false), ("10.0.0.1", false),
        ("128.0.0.1", false), ("126.255.255.255", false), ("127.0.0.1.nip.io", false), ("localhost.example", false),
        ("::2", false), ("::ffff:10.0.0.1", false), ("", false), ("[]", false),
        ("0:0:0:0:0:0:0:1", true), ("fe80::1", false),
    ])
    func loopback(_ host: String, _ expected: Bool) {
        #expect(isLoopbackHost(host) == expected, "\(host)")
    }
}
