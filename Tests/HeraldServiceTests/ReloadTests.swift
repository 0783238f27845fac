import APNsProvider
import FCMProvider
import APNs
import Foundation
import GRPCEngine
import Synchronization
import TLSTransport
import Testing

@testable import HeraldService

/// What SIGHUP swaps (issue 11): the grants every copy of the policy sees,
/// and the gateway's routes, the replaced clients shut down only once their
/// sends in flight have returned.
@Suite("Reload", .timeLimit(.minutes(1)))
struct ReloadTests {
    private func grant(_ label: String, _ token: String, _ bundles: Set<String> = ["*"]) -> AccessPolicy.Grant {
        .init(label: label, token: token, bundleIDs: bundles)
    }

    private func authorization(_ token: String) -> GRPCMetadata {
        GRPCMetadata([("authorization", "Token \(token)")])
    }

    @Test func aClosedPolicyIsNeverOpenedAndAnOpenOneNeverClosed() {
        let closed = AccessPolicy(grants: [grant("ci", "ci-token-0123456789abcdef")])
        #expect(!closed.replaceGrants([]))
        #expect(closed.grants.map(\.label) == ["ci"])
        let open = AccessPolicy()
        #expect(!open.replaceGrants([grant("ci", "ci-token-0123456789abcdef")]))
        #expect(open.isOpen && open.admission == nil)
    }

    @Test func everyCopySeesTheNewGrantsAtOnce() throws {
        let policy = AccessPolicy(grants: [grant("ci", "old-token-0123456789abcdef")])
        let copy = policy  // what a handler holds
        let admission = try #require(policy.admission)
        #expect(admission(authorization("old-token-0123456789abcdef")) == nil)
        #expect(policy.replaceGrants([grant("ci", "new-token-0123456789abcdef")]))
        #expect(admission(authorization("old-token-0123456789abcdef"))?.code == .unauthenticated)
        #expect(admission(authorization("new-token-0123456789abcdef")) == nil)
        #expect(try copy.authenticate(authorization("new-token-0123456789abcdef"))?.label == "ci")
    }

    @Test func changesAreNamedByLabel() {
        let old = [grant("ci", "ci-token-0123456789abcdef"), grant("ops", "ops-token-0123456789abcdef"),
                   grant("gone", "gone-token-0123456789abcdef")]
        let new = [grant("ci", "ci-token-rotated-0123456789"), grant("ops", "ops-token-0123456789abcdef"),
                   grant("qa", "qa-token-0123456789abcdef"), grant("gone2", "gone-token-0123456789abcdef", ["com.a"])]
        let changes = AccessPolicy.changes(from: old, to: new)
        #expect(changes.added == ["gone2", "qa"])
        #expect(changes.removed == ["gone"])
        #expect(changes.changed == ["ci"])
    }

    private func routes(_ specs: String, keyFile: URL, reusing old: [APNsGateway.Route] = []) throws -> [APNsGateway.Route] {
        // Written by Foundation with 0644; Herald refuses a key group or others may read.
        #expect(chmod(keyFile.path, 0o600) == 0)
        let spec = try APNsRouteSpec.parse("\(specs) key=\(keyFile.path)", source: "test")
        return try APNsRouteSpec.makeRoutes([spec], reusing: old)
    }

    @Test func anUnchangedRouteKeepsItsClientAndAChangedOneGetsANewOne() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("AuthKey.p8")
        try PrivateKey.generateP256().privateKeyPEM().write(to: keyFile, atomically: false, encoding: .utf8)
        let first = try routes("team=T key-id=K endpoint=127.0.0.1:2197", keyFile: keyFile)
        let same = try routes("team=T key-id=K endpoint=127.0.0.1:2197", keyFile: keyFile, reusing: first)
        #expect(same[0].client === first[0].client)
        let moved = try routes("team=T key-id=K endpoint=127.0.0.1:2198", keyFile: keyFile, reusing: first)
        #expect(moved[0].client !== first[0].client)
        // The same path with a new key in it: a new client.
        try PrivateKey.generateP256().privateKeyPEM().write(to: keyFile, atomically: false, encoding: .utf8)
        let rotated = try routes("team=T key-id=K endpoint=127.0.0.1:2197", keyFile: keyFile, reusing: first)
        #expect(rotated[0].client !== first[0].client)
    }

    @Test func aReplacedClientIsShutDownOnlyAfterItsLastSendInFlight() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-retire-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("AuthKey.p8")
        try PrivateKey.generateP256().privateKeyPEM().write(to: keyFile, atomically: false, encoding: .utf8)
        let old = try routes("team=T key-id=K endpoint=127.0.0.1:2197", keyFile: keyFile)
        let gateway = APNsGateway(routes: old)
        let oldClient = old[0].client
        gateway.retirement.begin(oldClient)  // a send in flight on the old route

        let new = try routes("team=T key-id=K endpoint=127.0.0.1:2198", keyFile: keyFile, reusing: old)
        let retired = gateway.replaceRoutes(new)
        #expect(retired.count == 1 && retired[0] === oldClient)
        #expect(gateway.client(bundleID: "com.a", environment: .production) === new[0].client)

        let finished = Flag()
        let retirement = Task {
            await gateway.retireWhenIdle(oldClient)
            finished.value.store(true, ordering: .sequentiallyConsistent)
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while gateway.retirement.waitingClients == 0 {
            try #require(ContinuousClock.now < deadline, "retirement never waited")
            await Task.yield()
        }
        let finishedEarly = finished.value.load(ordering: .sequentiallyConsistent)
        #expect(!finishedEarly)
        gateway.retirement.end(oldClient)  // the send returns
        await retirement.value
        let finishedAfter = finished.value.load(ordering: .sequentiallyConsistent)
        #expect(finishedAfter)
        #expect(!gateway.retirement.take(oldClient))  // shut down, once
        await gateway.shutdown()
    }
}

private final class Flag: Sendable {
    let value = Atomic(false)
}
