import HeraldCore
import HeraldStorage
import HeraldTestSupport
import Logging
import Testing

@testable import HeraldService

/// The retention pass prunes the caps' ledger too (`PolicyLedger`): counted
/// sends older than the longest cap period, in bounded batches, after the
/// messages; none without caps.
@Suite("Retention service: counted sends", .timeLimit(.minutes(1)))
struct RetentionLedgerTests {
    static let t0: Int64 = 1_800_000_000_000
    static let hour: Int64 = 3_600_000

    static func send(_ id: String, at: Int64) -> CountedSend {
        CountedSend(bundleID: "com.example.retention", userID: "u1", campaignID: "c", messageID: id, at: at)
    }

    @Test func countedSendsOlderThanTheLongestPeriodArePrunedInBatches() async throws {
        try await withTemporaryDirectory(prefix: "herald-retention") { directory in
            let store = try SQLiteStore(path: "\(directory)/herald.sqlite")
            for i in 0..<25 { try await store.recordCountedSend(Self.send("old-\(i)", at: Self.t0 - 2 * Self.hour + Int64(i))) }
            // Exactly one period old: no cap can see it any more, but it is not before the cutoff.
            try await store.recordCountedSend(Self.send("edge", at: Self.t0 - Self.hour))
            try await store.recordCountedSend(Self.send("recent", at: Self.t0 - 1))
            var policy = RetentionPolicy()
            policy.batchSize = 10
            policy.pauseBetweenBatches = .zero
            let logger = Logger(label: "retention-test")

            // No caps configured: nothing of the ledger is pruned.
            let without = RetentionService(store: store, policy: policy, clock: ManualClock(now: Self.t0), logger: logger)
            #expect(await without.pass(now: Self.t0).countedSends == 0)

            policy.countedSendsHorizon = { Self.hour }
            let service = RetentionService(store: store, policy: policy, clock: ManualClock(now: Self.t0), logger: logger)
            let pass = await service.pass(now: Self.t0)
            #expect(pass.countedSends == 25 && pass.error == nil && pass.messages == 0)
            #expect(try await store.countedSends(bundleID: "com.example.retention", userID: "u1", campaignID: nil, since: .min)
                    == [Self.t0 - Self.hour, Self.t0 - 1])
            #expect(await service.pass(now: Self.t0).countedSends == 0)
            await store.close()
        }
    }
}
