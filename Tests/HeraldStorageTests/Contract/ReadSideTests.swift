import Foundation
import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldStorage

@Suite("Store contract: read side (SQLite, PostgreSQL; the in-memory store has none): GetMessage detail, ListMessages keyset pages, campaign counts (schema v4)", .storeCaseLimit)
struct ReadSideTests {
    // MARK: Hostile first

    @Test(arguments: StoreKind.durable) func anotherBundlesMessageIsNeverFound(_ kind: StoreKind) async throws {
        try await withServableStore(kind) { store in
            let message = makeMessage(bundleID: "com.a", key: "k")
            _ = try await store.schedule(message)
            #expect(try await store.messageDetail(bundleID: "com.b", messageID: message.id) == nil)
            #expect(try await store.messageDetail(bundleID: "com.b", idempotencyKey: "k") == nil)
            #expect(try await store.messageDetail(bundleID: "com.a", messageID: "no-such-id") == nil)
            #expect(try await store.listMessages(MessageListQuery(bundleID: "com.b", userID: "user-1", limit: 10)).items.isEmpty)
            #expect(try await store.campaignCounts(bundleID: "com.b", campaignID: "welcome", createdFrom: nil, createdBefore: nil).isEmpty)
            #expect(try await store.messageDetail(bundleID: "com.a", messageID: message.id)?.message.id == message.id)
        }
    }

    // MARK: Detail

    @Test(arguments: StoreKind.durable) func detailHasOutcomesMilestonesAndWhoSupersededIt(_ kind: StoreKind) async throws {
        try await withServableStore(kind) { store in
            let first = makeMessage(id: "m1", key: "k", createdAt: now)
            _ = try await store.schedule(first)
            let second = makeMessage(id: "m2", key: "k", createdAt: now + 1)
            _ = try await store.schedule(second)
            let old = try #require(try await store.messageDetail(bundleID: "com.example.app", messageID: "m1"))
            #expect(old.message.state == .superseded && old.supersededBy == "m2")
            #expect(try await store.messageDetail(bundleID: "com.example.app", idempotencyKey: "k")?.message.id == "m2")

            let claimed = try #require(try await store.claim(id: "m2", from: .scheduled, now: now + 10))
            try await store.recordHandOver(messageID: "m2", deviceToken: "t3", push: claimed.pushStartedAt!, at: now + 11)
            let inFlight = try #require(try await store.messageDetail(bundleID: "com.example.app", messageID: "m2"))
            #expect(inFlight.inFlight.map(\.deviceToken) == ["t3"])
            #expect(inFlight.message.request.isEmpty, "the request blob is not loaded")
            let outcomes = [
                DeviceOutcome(messageID: "m2", deviceToken: "t1", kind: .sent, providerMessageID: "a-1", at: now + 20,
                              httpStatus: 200, attempts: 2, environment: .sandbox),
                DeviceOutcome(messageID: "m2", deviceToken: "t2", kind: .badDeviceToken, reason: "BadDeviceToken", at: now + 20,
                              httpStatus: 400, attempts: 1, environment: .production),
                DeviceOutcome(messageID: "m2", deviceToken: "t3", kind: .unregistered, reason: "Unregistered", at: now + 20,
                              httpStatus: 410, attempts: 1, environment: .sandbox),
            ]
            #expect(try await store.transition(id: "m2", from: .scheduled, to: .sent, dueAt: nil, providerMessageID: "a-1",
                                               lastError: nil, now: now + 20, recording: outcomes))
            try await store.recordOutcome(DeviceOutcome(messageID: "m2", deviceToken: "t1", kind: .opened, at: now + 40))
            let detail = try #require(try await store.messageDetail(bundleID: "com.example.app", messageID: "m2"))
            #expect(detail.outcomes.filter { $0.kind != .opened } == outcomes)
            #expect(detail.inFlight.isEmpty)
            #expect(detail.milestones == MessageMilestones(sentAt: now + 20, openedAt: now + 40))
        }
    }

    // MARK: Pages

    @Test(arguments: StoreKind.durable) func pagesWalkEveryMessageNewestFirstWithoutDuplicateOrGap(_ kind: StoreKind) async throws {
        try await withServableStore(kind) { store in
            // Many share a creation time: the id breaks the tie.
            let messages = (0..<1_003).map { i in
                makeMessage(id: String(format: "id-%05d", i), campaignID: i % 2 == 0 ? "even" : "odd", key: "k\(i)",
                            createdAt: now + Int64(i / 10))
            }
            try await store.importMessages(messages)
            try await store.importMessages([makeMessage(id: "other-user", userID: "user-2", key: "k-other")])
            var seen: [String] = []
            var cursor: MessageCursor?
            repeat {
                let page = try await store.listMessages(MessageListQuery(bundleID: "com.example.app", userID: "user-1", after: cursor, limit: 100))
                #expect(page.items.count == 100 || page.next == nil)
                seen += page.items.map(\.message.id)
                cursor = page.next
            } while cursor != nil
            #expect(seen == messages.map(\.id).reversed())
            let odd = try await store.listMessages(MessageListQuery(
                bundleID: "com.example.app", userID: "user-1", campaignID: "odd", limit: 1_000))
            #expect(odd.items.count == 501 && odd.next == nil && odd.items.allSatisfy { $0.message.campaignID == "odd" })
            let sent = try await store.listMessages(MessageListQuery(
                bundleID: "com.example.app", userID: "user-1", states: [.sent, .failed], limit: 10))
            #expect(sent.items.isEmpty && sent.next == nil)
        }
    }

    // MARK: Campaign

    /// A message of campaign "welcome" keyed by its id (or `key`).
    static func message(_ id: String, _ method: DeliveryMethod, ab: Bool, key: String? = nil, created: Int64 = now) -> StoredMessage {
        var m = makeMessage(id: id, key: key ?? id, method: method, createdAt: created)
        m.abTest = ab
        return m
    }

    /// Claims and moves `id` through `steps` from SCHEDULED, each transition expected to apply.
    static func move(_ store: any TestStore, _ id: String, _ steps: [MessageState], at: Int64) async throws {
        var from = MessageState.scheduled
        for to in steps {
            _ = try await store.claim(id: id, from: from, now: at)
            #expect(try await store.transition(id: id, from: from, to: to, dueAt: nil, providerMessageID: nil, lastError: nil, now: at))
            from = to
        }
    }

    @Test(arguments: StoreKind.durable) func campaignCountsFollowTheFunnel(_ kind: StoreKind) async throws {
        try await withServableStore(kind) { store in
            try await store.importMessages([
                Self.message("ca1", .contextAware, ab: true), Self.message("ca2", .contextAware, ab: true),
                Self.message("ca3", .contextAware, ab: true), Self.message("tr1", .traditional, ab: true),
                Self.message("tr2", .traditional, ab: true), Self.message("ch1", .traditional, ab: false),
                Self.message("late", .traditional, ab: true, created: now + 1_000_000),
            ])
            try await Self.move(store, "ca1", [.handedOff], at: now + 10)
            try await Self.move(store, "ca2", [.handedOff, .sent], at: now + 20)  // the fallback alert
            try await store.recordOutcome(DeviceOutcome(messageID: "ca1", deviceToken: "t", kind: .displayed, at: now + 30))
            try await store.recordOutcome(DeviceOutcome(messageID: "ca1", deviceToken: "t", kind: .opened, at: now + 31))
            try await Self.move(store, "tr1", [.sent], at: now + 10)
            try await store.recordOutcome(DeviceOutcome(messageID: "tr1", deviceToken: "t", kind: .displayed, at: now + 30))
            #expect(try await store.transition(id: "tr2", from: .scheduled, to: .noDevices, dueAt: nil, providerMessageID: nil,
                                               lastError: "none", now: now + 10))
            _ = try await store.cancel(bundleID: "com.example.app", platform: .ios, userID: "user-1", campaignID: "welcome",
                                       idempotencyKey: "ca3", now: now + 5)
            let counts = try await store.campaignCounts(bundleID: "com.example.app", campaignID: "welcome",
                                                        createdFrom: nil, createdBefore: now + 1)
            var ca = CohortCounts(deliveryMethod: .contextAware, abTest: true)
            (ca.scheduled, ca.handedOff, ca.sent, ca.fallbackSent, ca.displayed, ca.opened, ca.cancelled, ca.delivered) = (3, 2, 1, 1, 1, 1, 1, 2)
            var tr = CohortCounts(deliveryMethod: .traditional, abTest: true)
            (tr.scheduled, tr.sent, tr.displayed, tr.noDevices, tr.delivered) = (2, 1, 1, 1, 1)
            var chosen = CohortCounts(deliveryMethod: .traditional, abTest: false)
            chosen.scheduled = 1
            #expect(Set(counts) == [ca, tr, chosen])
            let all = try await store.campaignCounts(bundleID: "com.example.app", campaignID: "welcome", createdFrom: nil, createdBefore: nil)
            #expect(all.first { $0.deliveryMethod == .traditional && $0.abTest }?.scheduled == 3)
        }
    }

    /// Issue 29: a report over a whole campaign reads the counts SQLite
    /// keeps (schema v14) while a report over a time range counts messages.
    /// Through every write path — Schedule, import, supersede, cancel,
    /// transitions, outcomes, policy holds and suppressions, retention's
    /// delete — both must say the same, cohort by cohort.
    @Test(arguments: StoreKind.durable) func wholeCampaignCountsEqualCountingEveryMessage(_ kind: StoreKind) async throws {
        try await withServableStore(kind) { store in
            func expectEqualCounts(_ step: String) async throws {
                let kept = try await store.campaignCounts(bundleID: "com.example.app", campaignID: "welcome", createdFrom: nil, createdBefore: nil)
                let counted = try await store.campaignCounts(bundleID: "com.example.app", campaignID: "welcome",
                                                             createdFrom: .min, createdBefore: .max)
                #expect(Set(kept) == Set(counted), "\(step)")
                #expect(kept.count == counted.count, "\(step)")
            }
            try await expectEqualCounts("empty")
            var imported: [StoredMessage] = []
            for i in 0..<12 {
                let method: DeliveryMethod = i % 3 == 0 ? .contextAware : .traditional
                imported.append(Self.message("m\(i)", method, ab: i % 4 != 0, created: now + Int64(i)))
            }
            var sent = Self.message("imported-sent", .traditional, ab: true)
            sent.state = .sent
            imported.append(sent)
            try await store.importMessages(imported)
            _ = try await store.schedule(Self.message("s1", .contextAware, ab: true, created: now + 20))
            try await expectEqualCounts("imported and scheduled")

            try await Self.move(store, "m0", [.handedOff, .sent], at: now + 100)
            try await Self.move(store, "m1", [.sent], at: now + 100)
            try await Self.move(store, "m2", [.failed], at: now + 100)
            try await Self.move(store, "m3", [.handedOff], at: now + 100)
            try await store.recordOutcome(DeviceOutcome(messageID: "m3", deviceToken: "t", kind: .displayed, at: now + 110))
            try await store.recordOutcome(DeviceOutcome(messageID: "m3", deviceToken: "t", kind: .opened, at: now + 111))
            try await store.recordOutcome(DeviceOutcome(messageID: "m1", deviceToken: "t", kind: .opened, at: now + 112))
            try await expectEqualCounts("delivered")

            _ = try #require(try await store.claim(id: "m4", from: .scheduled, now: now + 120))
            #expect(try await store.hold(id: "m4", from: .scheduled, now: now + 120, recording: [
                DeviceOutcome(messageID: "m4", deviceToken: "t", kind: .waiting, reason: "quiet_hours", at: now + 120, notBefore: now + 9_000),
            ]))
            try await Self.move(store, "m5", [.suppressed], at: now + 120)
            _ = try #require(try await store.claim(id: "m6", from: .scheduled, now: now + 120))
            #expect(try await store.hold(id: "m6", from: .scheduled, now: now + 120, recording: [
                DeviceOutcome(messageID: "m6", deviceToken: "t", kind: .waiting, reason: "frequency_cap", at: now + 120, notBefore: now + 200),
            ]))
            try await expectEqualCounts("held and suppressed")

            // m6 (held) superseded by its key; m7 cancelled; a message nobody has.
            _ = try await store.schedule(Self.message("m6-again", .traditional, ab: true, key: "m6", created: now + 130))
            #expect(try await store.message(id: "m6")?.state == .superseded)
            _ = try await store.cancel(bundleID: "com.example.app", platform: .ios, userID: "user-1", campaignID: "welcome",
                                       idempotencyKey: "m7", now: now + 140)
            try await Self.move(store, "m8", [.noDevices], at: now + 150)
            try await Self.move(store, "m9", [.expired], at: now + 150)
            try await expectEqualCounts("superseded, cancelled, ended")

            // Retention deletes finished messages: their counts go with them.
            let pruned = try await store.pruneFinished(before: now + 1_000_000, limit: 100)
            #expect(pruned.messages > 0)
            try await expectEqualCounts("pruned")
            let left = try await store.campaignCounts(bundleID: "com.example.app", campaignID: "welcome", createdFrom: nil, createdBefore: nil)
            #expect(!left.isEmpty)
        }
    }
}
