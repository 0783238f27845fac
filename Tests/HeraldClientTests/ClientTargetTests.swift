import GRPCEngine
import Testing

@testable import HeraldClient

/// `--addr` / HERALD_ADDRESS parsing: hostile and malformed first.
@Suite struct ClientTargetTests {
    @Test(arguments: [
        "", "   ", ":50051", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:99999999999999999999",
        "127.0.0.1:-1", "127.0.0.1:5x", "http://127.0.0.1:50051", "grpc://h:1", "::1", "fe80::1:50051", "[::1",
        "[::1]x", "[]:50051", "host name:1", "a/b:1", "user@host:1", String(repeating: "a", count: 300) + ":1",
    ])
    func refusesMalformedAddresses(_ text: String) {
        #expect(throws: ClientFailure.self) { try ClientTarget.parse(text) }
        do {
            _ = try ClientTarget.parse(text)
        } catch {
            #expect(error.code == .ok, "a bad address is a local problem (exit 1), not a gRPC status")
            #expect(error.exitCode == 1)
            #expect(!error.message.isEmpty)
        }
    }

    @Test func aSchemeIsNamedInTheMessage() throws {
        do {
            _ = try ClientTarget.parse("http://127.0.0.1:50051")
            Issue.record("accepted a URL")
        } catch {
            #expect(error.message.contains("URL scheme"))
        }
    }

    @Test func parsesHostPortForms() throws {
        #expect(try ClientTarget.parse("127.0.0.1:50051") == ("127.0.0.1", 50051))
        #expect(try ClientTarget.parse(" localhost:1 ") == ("localhost", 1))
        #expect(try ClientTarget.parse("herald.internal") == ("herald.internal", 50051))
        #expect(try ClientTarget.parse("[::1]:65535") == ("::1", 65535))
        #expect(try ClientTarget.parse("[::1]") == ("::1", 50051))
    }

    @Test func addressPutsIPv6InBrackets() {
        #expect(ClientTarget(host: "::1", port: 5).address == "[::1]:5")
        #expect(ClientTarget(host: "h", port: 5).address == "h:5")
    }
}

/// The one exit-status table.
@Suite struct ExitStatusTests {
    @Test func everyGRPCCodeMapsToTenPlusItsNumber() {
        for raw in 1...16 {
            #expect(ExitStatus.forFailure(GRPCStatus.Code(rawValue: raw)) == Int32(10 + raw))
        }
        #expect(ClientFailure(.invalidArgument, "x").exitCode == 13)
        #expect(ClientFailure(.notFound, "x").exitCode == 15)
        #expect(ClientFailure(.unavailable, "x").exitCode == 24)
        #expect(ClientFailure(.unauthenticated, "x").exitCode == 26)
    }

    @Test func outOfRangeCodesAreUnknownAndLocalIsOne() {
        #expect(ExitStatus.forFailure(GRPCStatus.Code(rawValue: 17)) == 12)
        #expect(ExitStatus.forFailure(GRPCStatus.Code(rawValue: -1)) == 12)
        #expect(ExitStatus.forFailure(GRPCStatus.Code(rawValue: 1000)) == 12)
        #expect(ClientFailure.local("x").exitCode == 1)
    }

    @Test func theTableNamesEveryStatus() {
        let table = ExitStatus.table
        for raw in 1...16 {
            #expect(table.contains("\(10 + raw)   \(GRPCStatus.Code(rawValue: raw).name)"))
        }
        #expect(table.contains("64"))
    }
}
