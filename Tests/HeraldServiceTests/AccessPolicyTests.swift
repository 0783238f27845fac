import GRPCEngine
import HeraldPrimitives
import Testing

@testable import HeraldService

@Suite("Access policy")
struct AccessPolicyTests {
    static let file = """
        # label   token                       bundles
        ci        ci-token-0123456789abcdef   com.example.app,com.example.other
        ops       ops-token-0123456789abcdef  *   # every bundle
        """

    private func metadata(_ authorization: String?) -> GRPCMetadata {
        authorization.map { GRPCMetadata([("authorization", $0)]) } ?? GRPCMetadata()
    }

    private func code(_ body: () throws -> Void) -> GRPCStatus.Code? {
        do { try body(); return nil } catch let status as GRPCStatus { return status.code } catch { return .unknown }
    }

    @Test("token and bundle decide", arguments: [
        ("Token ci-token-0123456789abcdef", "com.example.app", nil),
        ("token ci-token-0123456789abcdef", "com.example.other", nil),
        ("Token ci-token-0123456789abcdef", "com.evil.app", GRPCStatus.Code.permissionDenied),
        ("Token ops-token-0123456789abcdef", "com.anything.at.all", nil),
        ("Token ci-token-0123456789abcdeX", "com.example.app", .unauthenticated),
        ("Token ci-token-0123456789abcde", "com.example.app", .unauthenticated),
        ("Bearer ci-token-0123456789abcdef", "com.example.app", .unauthenticated),
        ("Token ", "com.example.app", .unauthenticated),
        ("", "com.example.app", .unauthenticated),
    ] as [(String, String, GRPCStatus.Code?)])
    func decides(authorization: String, bundle: String, expected: GRPCStatus.Code?) throws {
        let policy = try AccessPolicy.parse(Self.file, source: "tokens")
        #expect(code { try policy.authorize(metadata(authorization), bundleID: bundle) } == expected)
    }

    @Test func missingTokenIsUnauthenticated() throws {
        let policy = try AccessPolicy.parse(Self.file, source: "tokens")
        #expect(code { try policy.authorize(metadata(nil), bundleID: "com.example.app") } == .unauthenticated)
    }

    @Test func openPolicyAllowsEveryoneAndIsLoopbackOnly() throws {
        let policy = AccessPolicy()
        #expect(policy.isOpen)
        #expect(code { try policy.authorize(metadata(nil), bundleID: "com.example.app") } == nil)
        #expect(isLoopbackHost("127.0.0.1") && isLoopbackHost("::1") && isLoopbackHost("localhost"))
        #expect(!isLoopbackHost("0.0.0.0") && !isLoopbackHost("10.1.2.3"))
    }

    @Test("bad files are refused with the line", arguments: [
        ("ci short-token com.example.app", "shorter than 16"),
        ("ci ci-token-0123456789abcdef", "expected"),
        ("a ci-token-0123456789abcdef *\na ops-token-0123456789abcdef *", "used twice"),
    ])
    func badFiles(text: String, reason: String) {
        #expect {
            _ = try AccessPolicy.parse(text, source: "tokens")
        } throws: { error in
            "\(error)".contains(reason) && "\(error)".contains("tokens:")
        }
    }

    @Test func errorsNeverContainTheToken() throws {
        let policy = try AccessPolicy.parse(Self.file, source: "tokens")
        do {
            try policy.authorize(metadata("Token ci-token-0123456789abcdef"), bundleID: "com.evil.app")
            Issue.record("expected PERMISSION_DENIED")
        } catch let status as GRPCStatus {
            #expect(!status.message.contains("ci-token"))
            #expect(status.message.contains("\"ci\""))
        }
    }
}
