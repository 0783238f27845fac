import GRPCEngine
import HeraldProtos
import NIOCore
import Testing

@testable import HeraldService

/// Who sees what in Status (issue 24 item 7) and the admin listener's
/// shared `/metrics` rendering (item 2).
@Suite("Status visibility and the admin metrics cache")
struct StatusVisibilityTests {
    private func metadata(_ authorization: String?) -> GRPCMetadata {
        authorization.map { GRPCMetadata([("authorization", $0)]) } ?? GRPCMetadata()
    }

    private func status(policy: AccessPolicy) -> StatusService {
        StatusService(
            version: "9.9.9", startedAtMilliseconds: 1_795_000_000_000, startedAt: .now, state: ServingStateCell(.serving),
            serverStats: { GRPCServerStats(connectionsOpen: 1, rpcsInFlight: 0, rpcsTotal: 1) }, policy: policy)
    }

    private static let policy = AccessPolicy(grants: [
        .init(label: "ops", token: "ops-token-0123456789abcdef", bundleIDs: ["*"]),
        .init(label: "ci", token: "ci-token-0123456789abcdef", bundleIDs: ["com.a"]),
    ])

    @Test func withoutATokenOnlyStateAndCounts() throws {
        let service = status(policy: Self.policy)
        #expect(try service.view(metadata(nil)) == .anonymous)
        let bytes = try service.status(GRPCRequest(path: StatusService.path, message: []))
        let version = try ProtobufC.withUnpacked(Herald__V1__StatusResponse.self, from: bytes) { response in
            response.version.map { String(cString: $0) } ?? ""
        }
        #expect(version.isEmpty)
    }

    @Test func aWrongOrMalformedTokenIsUnauthenticated() {
        let service = status(policy: Self.policy)
        for header in ["Token nope-nope-nope-nope", "Bearer ops-token-0123456789abcdef", "Token "] {
            #expect(throws: GRPCStatus.self) {
                do { _ = try service.status(GRPCRequest(path: StatusService.path, metadata: metadata(header), message: [])) } catch let status as GRPCStatus {
                    #expect(status.code == .unauthenticated)
                    throw status
                }
            }
        }
    }

    @Test func tokensSeeTheirScope() throws {
        let service = status(policy: Self.policy)
        #expect(try service.view(metadata("Token ops-token-0123456789abcdef")) == .everything)
        let scoped = try service.view(metadata("Token ci-token-0123456789abcdef"))
        #expect(scoped == .bundles(["com.a"]))
        #expect(scoped.shows(["com.a", "com.b"]) && scoped.shows(["*"]) && !scoped.shows(["com.b"]))
        #expect(!StatusService.View.anonymous.shows(["*"]))
        // No tokens configured (loopback only): everything, as before.
        #expect(try status(policy: AccessPolicy()).view(metadata(nil)) == .everything)
    }

    @Test func metricsAreRenderedAtMostOncePerInterval() {
        let renders = RenderCounter()
        let cache = AdminMetricsCache(interval: .seconds(1)) { Array("m \(renders.next())\n".utf8) }
        let start = ContinuousClock.now
        let first = cache.body(now: start)
        for step in 1...50 { #expect(cache.body(now: start + .milliseconds(step * 19)) == first) }
        #expect(cache.renderCount == 1)
        let later = cache.body(now: start + .milliseconds(1001))
        #expect(later != first && cache.renderCount == 2)
        #expect(String(buffer: later).contains("herald_admin_metrics_renders_total 2\n"))
    }
}

private final class RenderCounter: @unchecked Sendable {
    private var value = 0
    func next() -> Int { value += 1; return value }
}
