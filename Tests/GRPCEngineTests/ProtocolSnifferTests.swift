import NIOCore
import Testing

@testable import GRPCEngine

/// The one prefix check that splits the gRPC port between HTTP/2 and HTTP/1.1.
@Suite("Protocol detection on the gRPC port")
struct ProtocolSnifferTests {
    static func verdict(_ text: String) -> GRPCProtocolSniffer.Verdict {
        GRPCProtocolSniffer.verdict(ByteBuffer(string: text))
    }

    @Test("the whole preface is HTTP/2; any prefix of it waits for more")
    func preface() {
        #expect(Self.verdict("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") == .http2)
        #expect(Self.verdict("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\u{0}\u{0}\u{0}\u{4}") == .http2)
        let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        #expect(preface.count == 24)
        for length in 0..<24 {
            #expect(GRPCProtocolSniffer.verdict(ByteBuffer(bytes: preface.prefix(length))) == .undecided)
        }
    }

    @Test("a request line is HTTP/1.1 once its method and space have arrived")
    func http1() {
        #expect(Self.verdict("POST /v1/campaigns/schedule_message_for_user HTTP/1.1\r\n") == .http1)
        #expect(Self.verdict("GET / HTTP/1.1\r\n") == .http1)
        #expect(Self.verdict("DELETE ") == .http1)
        for partial in ["P", "PO", "POS", "POST", "G", "GET", "PU", "D"] {
            #expect(Self.verdict(partial) == .undecided, "\(partial)")
        }
    }

    @Test("anything else goes to the engine, which refuses it as before (h2spec 3.5 #2: GOAWAY)")
    func neither() {
        #expect(Self.verdict("INVALID CONNECTION PREFACE\r\n\r\n") == .http2)
        #expect(Self.verdict("PRI * HTTP/1.1\r\n") == .http2)
        #expect(Self.verdict("POSTX /") == .http2)
        #expect(Self.verdict("get / HTTP/1.1") == .http2)
        #expect(Self.verdict("\u{16}\u{3}\u{1}") == .http2)
        #expect(Self.verdict("\u{0}") == .http2)
    }
}
