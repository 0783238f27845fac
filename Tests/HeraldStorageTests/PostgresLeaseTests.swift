import Foundation
import HeraldCore
@testable import HeraldPostgres
import Testing
@testable import HeraldStorage

/// Leases across replicas (`SharedDueStore`): a live replica's claim is
/// never taken, a renewed one holds past its first lease, an expired one is
/// taken over by the crash rule, and a restart under the same replica id
/// resolves its own claims at once. Each "replica" is a pool of its own
/// with its own `replicaID` on one schema.
@Suite("PostgreSQL leases across replicas", .storeCaseLimit,
       .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct PostgresLeaseTests {
    /// Opens replicas named `names` on one fresh schema, runs `body`, closes them.
    func withReplicas(
        _ names: [String], _ body: ([PostgresStore], PostgresStoreConfiguration) async throws -> Void
    ) async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            var stores: [PostgresStore] = []
            do {
                for name in names {
                    var replica = configuration
                    replica.replicaID = name
                    stores.append(try await PostgresStore.open(replica))
                }
                try await body(stores, configuration)
            } catch {
                for store in stores { await store.close() }
                throw error
            }
            for store in stores { await store.close() }
        }
    }

    static func owner(_ configuration: PostgresStoreConfiguration, _ id: String) async throws -> String? {
        try await PostgresStoreTests.scalar(configuration, "SELECT coalesce(owner, 'none') FROM messages WHERE id = '\(id)'")
    }

    // MARK: Hostile first

    @Test func aLiveReplicasClaimIsNeverTaken() async throws {
        try await withReplicas(["a", "b"]) { replicas, configuration in
            let (a, b) = (replicas[0], replicas[1])
            let message = makeMessage(id: "m-live", dueAt: now)
            _ = try await a.schedule(message)
            #expect(try await a.claimDue(before: now, limit: 10, now: now).map(\.id) == ["m-live"])
            try await a.recordHandOvers([HandOverMark(messageID: "m-live", deviceToken: "handed", push: now, at: now + 1)])
            // B starts (its start-up recovery) and polls, up to the last millisecond of A's lease.
            #expect(try await b.recoverInterrupted(now: now + 10).resumed.isEmpty)
            #expect(try await b.takeOverExpired(now: now + 29_999).resumed.isEmpty)
            #expect(try await b.claimDue(before: now + 29_999, limit: 10, now: now + 29_999).isEmpty)
            // B cannot renew (or so steal) A's lease.
            #expect(try await b.renewLeases(ids: ["m-live"], now: now + 20_000).isEmpty)
            #expect(try await Self.owner(configuration, "m-live") == "a")
            #expect(try await a.outcomes(messageID: "m-live").isEmpty)  // nothing marked UNCONFIRMED
            // A finishes its push normally.
            #expect(try await a.transition(id: "m-live", from: .scheduled, to: .sent, dueAt: nil, providerMessageID: "x", lastError: nil,
                                           now: now + 30_000))
        }
    }

    /// Fencing: A stalls past its lease, B takes the claim over and claims
    /// again; A's late result must not end B's push, record A's outcomes or
    /// drop B's hand-over marks. The app's DISPLAYED report is applied by any
    /// replica (as on SQLite).
    @Test func aReplicaThatLostItsClaimCannotEndThePush() async throws {
        try await withReplicas(["a", "b"]) { replicas, configuration in
            let (a, b) = (replicas[0], replicas[1])
            _ = try await a.schedule(makeMessage(id: "m-fence", dueAt: now))
            #expect(try await a.claimDue(before: now, limit: 10, now: now).count == 1)
            #expect(try await b.takeOverExpired(now: now + 30_001).resumed == ["m-fence"])
            let reclaimed = try #require(try await b.claimDue(before: now + 30_002, limit: 10, now: now + 30_002).first)
            let push = try #require(reclaimed.pushStartedAt)
            try await b.recordHandOvers([HandOverMark(messageID: "m-fence", deviceToken: "b-device", push: push, at: now + 30_003)])
            // A wakes up and reports its (late) result.
            let late = DeviceOutcome(messageID: "m-fence", deviceToken: "a-device", kind: .sent, at: now + 30_004)
            #expect(try await !a.transition(id: "m-fence", from: .scheduled, to: .sent, dueAt: nil, providerMessageID: "late",
                                            lastError: nil, now: now + 30_004, recording: [late]))
            #expect(try await b.outcomes(messageID: "m-fence").isEmpty)
            #expect(try await b.handOvers(messageID: "m-fence", push: push) == ["b-device"])
            #expect(try await Self.owner(configuration, "m-fence") == "b")
            // B, the owner, ends it.
            #expect(try await b.transition(id: "m-fence", from: .scheduled, to: .sent, dueAt: nil, providerMessageID: "b",
                                           lastError: nil, now: now + 30_005))
            #expect(try await a.message(id: "m-fence")?.state == .sent)
        }
    }

    /// Concurrent transitions share transactions (`PostgresBatcher`), each
    /// still fenced on its own: A ends 30 pushes at once, one of which B
    /// took over and claimed again meanwhile.
    @Test func batchedTransitionsKeepTheFencePerMessage() async throws {
        try await withReplicas(["a", "b"]) { replicas, configuration in
            let (a, b) = (replicas[0], replicas[1])
            let messages = (0..<30).map { makeMessage(id: String(format: "m-%02d", $0), key: "k\($0)", dueAt: now) }
            try await a.importMessages(messages)
            #expect(try await a.claimDue(before: now, limit: 30, now: now).count == 30)
            // B takes m-07 over after A's lease ran out (A renewed the others).
            #expect(try await a.renewLeases(ids: messages.map(\.id).filter { $0 != "m-07" }, now: now + 20_000).count == 29)
            #expect(try await b.takeOverExpired(now: now + 30_001).resumed == ["m-07"])
            let reclaimed = try #require(try await b.claimDue(before: now + 30_002, limit: 10, now: now + 30_002).first)
            try await b.recordHandOvers([HandOverMark(messageID: "m-07", deviceToken: "b-device",
                                                      push: try #require(reclaimed.pushStartedAt), at: now + 30_003)])
            let applied = try await withThrowingTaskGroup(of: (String, Bool).self) { group in
                for message in messages {
                    group.addTask {
                        let outcome = DeviceOutcome(messageID: message.id, deviceToken: "a-device", kind: .sent, at: now + 30_004)
                        return (message.id, try await a.transition(id: message.id, from: .scheduled, to: .sent, dueAt: nil,
                                                                   providerMessageID: "x", lastError: nil, now: now + 30_004,
                                                                   recording: [outcome]))
                    }
                }
                return try await group.reduce(into: [String: Bool]()) { $0[$1.0] = $1.1 }
            }
            #expect(applied.filter(\.value).count == 29 && applied["m-07"] == false)
            #expect(try await a.countsByState() == [.sent: 29, .scheduled: 1])
            #expect(try await b.outcomes(messageID: "m-07").isEmpty)
            #expect(try await b.outcomes(messageID: "m-08").map(\.deviceToken) == ["a-device"])
            #expect(try await b.handOvers(messageID: "m-07", push: try #require(reclaimed.pushStartedAt)) == ["b-device"])
            #expect(try await Self.owner(configuration, "m-07") == "b")
        }
    }

    /// The batch's one UPDATE applies each item's own values, a missing
    /// value (nil) leaving the column as it was, and a stale `from` changes nothing.
    @Test func aBatchOfTransitionsAppliesEachItemsOwnValues() async throws {
        try await withReplicas(["a"]) { replicas, _ in
            let a = replicas[0]
            let messages = (0..<4).map { makeMessage(id: "m-\($0)", key: "k\($0)", dueAt: now) }
            try await a.importMessages(messages)
            #expect(try await a.claimDue(before: now, limit: 10, now: now).count == 4)
            let applied = try await a.transitions([
                Transition(id: "m-0", from: .scheduled, to: .handedOff, dueAt: now + 9_000, providerMessageID: nil, lastError: nil,
                           now: now + 1, outcomes: []),
                Transition(id: "m-1", from: .scheduled, to: .failed, dueAt: nil, providerMessageID: nil, lastError: "gone",
                           now: now + 2, outcomes: []),
                Transition(id: "m-2", from: .scheduled, to: .sent, dueAt: nil, providerMessageID: "apns-2", lastError: nil,
                           now: now + 3, outcomes: []),
                Transition(id: "m-3", from: .handedOff, to: .sent, dueAt: nil, providerMessageID: "stale", lastError: nil,
                           now: now + 4, outcomes: []),
            ])
            #expect(applied == [true, true, true, false])
            let (m0, m1, m2, m3) = (try await a.message(id: "m-0"), try await a.message(id: "m-1"),
                                    try await a.message(id: "m-2"), try await a.message(id: "m-3"))
            #expect(m0?.state == .handedOff && m0?.dueAt == now + 9_000 && m0?.providerMessageID == nil && m0?.sendingSince == nil)
            #expect(m1?.state == .failed && m1?.lastError == "gone" && m1?.dueAt == now && m1?.updatedAt == now + 2)
            #expect(m2?.state == .sent && m2?.providerMessageID == "apns-2" && m2?.lastError == nil)
            #expect(m3?.state == .scheduled && m3?.providerMessageID == nil && m3?.sendingSince != nil)
        }
    }

    /// A message named twice in one batch: its transitions apply in order.
    @Test func aMessageTwiceInOneBatchMovesOnInOrder() async throws {
        try await withReplicas(["a"]) { replicas, _ in
            let a = replicas[0]
            try await a.importMessages([makeMessage(id: "m-twice", key: "k", dueAt: now), makeMessage(id: "m-other", key: "o", dueAt: now)])
            #expect(try await a.claimDue(before: now, limit: 10, now: now).count == 2)
            let applied = try await a.transitions([
                Transition(id: "m-twice", from: .scheduled, to: .handedOff, dueAt: now + 9_000, providerMessageID: nil, lastError: nil,
                           now: now + 1, outcomes: []),
                Transition(id: "m-other", from: .scheduled, to: .sent, dueAt: nil, providerMessageID: nil, lastError: nil,
                           now: now + 1, outcomes: []),
                Transition(id: "m-twice", from: .handedOff, to: .displayed, dueAt: nil, providerMessageID: nil, lastError: nil,
                           now: now + 2, outcomes: []),
            ])
            #expect(applied == [true, true, true])
            #expect(try await a.message(id: "m-twice")?.state == .displayed)
            #expect(try await a.message(id: "m-other")?.state == .sent)
        }
    }

    @Test func theDisplayedReportIsAppliedByAnyReplica() async throws {
        try await withReplicas(["a", "b"]) { replicas, _ in
            let (a, b) = (replicas[0], replicas[1])
            _ = try await a.schedule(makeMessage(id: "m-shown", dueAt: now))
            #expect(try await a.claimDue(before: now, limit: 10, now: now).count == 1)
            #expect(try await a.transition(id: "m-shown", from: .scheduled, to: .handedOff, dueAt: now + 60_000,
                                           providerMessageID: nil, lastError: nil, now: now + 1))
            // A claims the fallback alert; the app reports DISPLAYED through B meanwhile.
            #expect(try await a.claimDue(before: now + 60_000, limit: 10, now: now + 60_000).count == 1)
            #expect(try await b.transition(id: "m-shown", from: .handedOff, to: .displayed, dueAt: nil, providerMessageID: nil,
                                           lastError: nil, now: now + 60_001))
            #expect(try await !a.transition(id: "m-shown", from: .handedOff, to: .sent, dueAt: nil, providerMessageID: nil,
                                            lastError: nil, now: now + 60_002))
            #expect(try await b.message(id: "m-shown")?.state == .displayed)
        }
    }

    @Test func aRenewedLeaseHoldsUntilItsRenewalExpires() async throws {
        try await withReplicas(["a", "b"]) { replicas, configuration in
            let (a, b) = (replicas[0], replicas[1])
            _ = try await a.schedule(makeMessage(id: "m-renew", dueAt: now))
            #expect(try await a.claimDue(before: now, limit: 10, now: now).count == 1)
            #expect(try await a.renewLeases(ids: ["m-renew", "unknown"], now: now + 20_000) == ["m-renew"])
            // The first lease (now + 30 s) has passed, the renewal (now + 50 s) has not.
            #expect(try await b.takeOverExpired(now: now + 40_000).resumed.isEmpty)
            #expect(try await Self.owner(configuration, "m-renew") == "a")
            // Not renewed again: B takes it over after the renewal's end, and A's later renewal finds it lost.
            #expect(try await b.takeOverExpired(now: now + 50_001) == InterruptedRecovery(resumed: ["m-renew"], unconfirmedDevices: 0))
            #expect(try await a.renewLeases(ids: ["m-renew"], now: now + 50_002).isEmpty)
            let reclaimed = try await b.claimDue(before: now + 50_003, limit: 10, now: now + 50_003)
            #expect(reclaimed.map(\.id) == ["m-renew"] && reclaimed.first?.attempts == 2)
            #expect(try await Self.owner(configuration, "m-renew") == "b")
        }
    }

    @Test func anExpiredClaimIsTakenOverByTheCrashRule() async throws {
        try await withReplicas(["a", "b"]) { replicas, _ in
            let (a, b) = (replicas[0], replicas[1])
            let message = makeMessage(id: "m-dead", key: "dead", dueAt: now)
            _ = try await a.schedule(message)
            let claimed = try #require(try await a.claimDue(before: now, limit: 10, now: now).first)
            let push = try #require(claimed.pushStartedAt)
            // A dies mid-push: "answered" got its answer, "handed" was handed over without one.
            try await a.recordHandOvers([
                HandOverMark(messageID: message.id, deviceToken: "answered", push: push, at: now + 1),
                HandOverMark(messageID: message.id, deviceToken: "handed", push: push, at: now + 1),
            ])
            try await a.recordOutcome(DeviceOutcome(messageID: message.id, deviceToken: "answered", kind: .sent, at: now + 2))
            let recovery = try await b.takeOverExpired(now: now + 30_001)
            #expect(recovery == InterruptedRecovery(resumed: [message.id], unconfirmedDevices: 1))
            let outcomes = try await b.outcomes(messageID: message.id)
            #expect(outcomes.map(\.deviceToken) == ["answered", "handed"] && outcomes.last?.kind == .unconfirmed)
            // Due again, for B: the push stays open, so the resumed send skips both devices.
            let resumed = try #require(try await b.claimDue(before: now + 30_002, limit: 10, now: now + 30_002).first)
            #expect(resumed.id == message.id && resumed.state == .scheduled && resumed.pushStartedAt == push && resumed.keySpent)
            // Taken once: a second takeover (another replica) finds nothing.
            #expect(try await a.takeOverExpired(now: now + 30_003).resumed.isEmpty)
        }
    }

    @Test func manyReplicasTakingOverAtOnceResumeEachClaimOnce() async throws {
        try await withReplicas(["dead", "b", "c", "d"]) { replicas, _ in
            let dead = replicas[0]
            let messages = (0..<60).map { makeMessage(id: String(format: "m-%02d", $0), key: "k\($0)", dueAt: now) }
            try await dead.importMessages(messages)
            #expect(try await dead.claimDue(before: now, limit: 100, now: now).count == 60)
            let resumed = try await withThrowingTaskGroup(of: [String].self) { group in
                for store in replicas.dropFirst() {
                    group.addTask { try await store.takeOverExpired(now: now + 30_001).resumed }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(resumed.count == 60 && Set(resumed) == Set(messages.map(\.id)))
        }
    }

    @Test func aRestartUnderTheSameReplicaIDResolvesOnlyItsOwnClaimsAtOnce() async throws {
        try await withReplicas(["a", "b"]) { replicas, configuration in
            let (a, b) = (replicas[0], replicas[1])
            try await a.importMessages([makeMessage(id: "m-a", key: "ka", dueAt: now), makeMessage(id: "m-b", key: "kb", dueAt: now + 1)])
            #expect(try await a.claimDue(before: now, limit: 1, now: now).map(\.id) == ["m-a"])
            #expect(try await b.claimDue(before: now + 1, limit: 1, now: now + 1).map(\.id) == ["m-b"])
            await a.close()  // "kill -9" of A: its claim stays
            var again = configuration
            again.replicaID = "a"
            let restarted = try await PostgresStore.open(again)
            let recovery = try await restarted.recoverInterrupted(now: now + 5)
            await restarted.close()
            // Its own claim at once (no wait for the lease); B's live claim untouched.
            #expect(recovery == InterruptedRecovery(resumed: ["m-a"], unconfirmedDevices: 0))
            #expect(try await Self.owner(configuration, "m-b") == "b")
            #expect(try await b.renewLeases(ids: ["m-b"], now: now + 6) == ["m-b"])
        }
    }

    /// Issue 26: a hold is fenced like a push's end: a replica that does
    /// not hold the claim cannot hold (or record for) another's message.
    @Test func anotherReplicasClaimCannotBeHeld() async throws {
        try await withReplicas(["a", "b"]) { replicas, configuration in
            let (a, b) = (replicas[0], replicas[1])
            _ = try await a.schedule(makeMessage(id: "m-held", dueAt: now))
            #expect(try await a.claimDue(before: now, limit: 10, now: now).map(\.id) == ["m-held"])
            let outcomes = [
                DeviceOutcome(messageID: "m-held", deviceToken: "aa", kind: .sent, at: now + 1),
                DeviceOutcome(messageID: "m-held", deviceToken: "bb", kind: .waiting, reason: "throttle", at: now + 1, notBefore: now + 5_000),
            ]
            #expect(try await b.hold(id: "m-held", from: .scheduled, now: now + 1, recording: outcomes) == false)
            #expect(try await a.outcomes(messageID: "m-held").isEmpty)
            #expect(try await Self.owner(configuration, "m-held") == "a")
            // The claim holder's hold applies: claim and lease given back, due at not_before.
            #expect(try await a.hold(id: "m-held", from: .scheduled, now: now + 2, recording: outcomes))
            #expect(try await Self.owner(configuration, "m-held") == "none")
            #expect(try await a.message(id: "m-held")?.dueAt == now + 5_000)
            #expect(try await b.claimDue(before: now + 5_000, limit: 10, now: now + 5_000).map(\.id) == ["m-held"])
        }
    }
}
