import Foundation
import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// Issue 26 item 6 at the read side of the stores (SQLite, PostgreSQL):
/// GetMessage's detail carries WAITING devices with their `notBefore` and
/// SUPPRESSED ones with their reason; ListMessages filters by SUPPRESSED;
/// CampaignReport counts `deferred` (held at least once) and `suppressed`
/// (ended SUPPRESSED) per cohort, superseded messages left out.
@Suite("Store contract: read side of the delivery policy (WAITING, SUPPRESSED, deferred counts)", .storeCaseLimit)
struct PolicyReadSideTests {
    static func waiting(_ id: String, _ token: String, until: Int64, at: Int64, _ reason: String = "quiet_hours") -> DeviceOutcome {
        DeviceOutcome(messageID: id, deviceToken: token, kind: .waiting, reason: reason, at: at, notBefore: until)
    }

    @Test(arguments: StoreKind.durable) func detailCarriesWaitingAndSuppressedDevices(_ kind: StoreKind) async throws {
        try await withServableStore(kind) { store in
            let message = makeMessage(id: "m1", key: "k1")
            _ = try await store.schedule(message)
            _ = try #require(try await store.claim(id: "m1", from: .scheduled, now: now))
            let suppressed = DeviceOutcome(messageID: "m1", deviceToken: "cc", kind: .suppressed, reason: "local_time", at: now + 1)
            #expect(try await store.hold(id: "m1", from: .scheduled, now: now + 1, recording: [
                suppressed, Self.waiting("m1", "aa", until: now + 7_200_000, at: now + 1),
                Self.waiting("m1", "bb", until: now + 3_600_000, at: now + 1, "frequency_cap"),
            ]))
            let detail = try #require(try await store.messageDetail(bundleID: "com.example.app", messageID: "m1"))
            #expect(detail.message.state == .scheduled && detail.message.dueAt == now + 3_600_000)
            #expect(detail.outcomes.map { "\($0.deviceToken) \($0.kind) \($0.reason ?? "-")" }
                    == ["cc suppressed local_time", "aa waiting quiet_hours", "bb waiting frequency_cap"])
            #expect(detail.outcomes.map(\.notBefore) == [nil, now + 7_200_000, now + 3_600_000])
            #expect(detail.inFlight.isEmpty)
            // By key too.
            #expect(try await store.messageDetail(bundleID: "com.example.app", idempotencyKey: "k1")?.outcomes.count == 3)
        }
    }

    @Test(arguments: StoreKind.durable) func listMessagesFiltersBySuppressed(_ kind: StoreKind) async throws {
        try await withServableStore(kind) { store in
            try await store.importMessages([
                makeMessage(id: "a", key: "a", createdAt: now), makeMessage(id: "b", key: "b", createdAt: now + 1),
                makeMessage(id: "c", key: "c", createdAt: now + 2),
            ])
            for id in ["a", "c"] {
                _ = try await store.claim(id: id, from: .scheduled, now: now + 10)
                #expect(try await store.transition(id: id, from: .scheduled, to: .suppressed, dueAt: nil, providerMessageID: nil,
                                                   lastError: "withheld", now: now + 10))
            }
            let page = try await store.listMessages(MessageListQuery(
                bundleID: "com.example.app", userID: "user-1", states: [.suppressed], limit: 10))
            #expect(page.items.map(\.message.id) == ["c", "a"])
            let others = try await store.listMessages(MessageListQuery(
                bundleID: "com.example.app", userID: "user-1", states: [.scheduled], limit: 10))
            #expect(others.items.map(\.message.id) == ["b"])
        }
    }

    @Test(arguments: StoreKind.durable) func campaignCountsDeferredAndSuppressedPerCohort(_ kind: StoreKind) async throws {
        try await withServableStore(kind) { store in
            func message(_ id: String, _ method: DeliveryMethod, ab: Bool, created: Int64 = now) -> StoredMessage {
                var m = makeMessage(id: id, key: id, method: method, createdAt: created)
                m.abTest = ab
                return m
            }
            try await store.importMessages([
                message("held-sent", .traditional, ab: true), message("held-waiting", .traditional, ab: true),
                message("withheld", .traditional, ab: true), message("plain", .traditional, ab: true),
                message("ca-held", .contextAware, ab: true), message("late", .traditional, ab: true, created: now + 1_000_000),
            ])
            func hold(_ id: String, at: Int64) async throws {
                _ = try #require(try await store.claim(id: id, from: .scheduled, now: at))
                #expect(try await store.hold(id: id, from: .scheduled, now: at, recording: [Self.waiting(id, "t", until: at + 1_000, at: at)]))
            }
            for id in ["held-sent", "held-waiting", "ca-held", "late"] { try await hold(id, at: now + 10) }
            try await hold("held-sent", at: now + 1_010)  // held twice: counted once
            _ = try await store.claim(id: "held-sent", from: .scheduled, now: now + 2_010)
            #expect(try await store.transition(id: "held-sent", from: .scheduled, to: .sent, dueAt: nil, providerMessageID: nil,
                                               lastError: nil, now: now + 2_010))
            _ = try await store.claim(id: "withheld", from: .scheduled, now: now + 10)
            #expect(try await store.transition(id: "withheld", from: .scheduled, to: .suppressed, dueAt: nil, providerMessageID: nil,
                                               lastError: "withheld", now: now + 10))
            // A held message superseded by its key is not counted (its replacement is).
            let replacement = message("ca-held-2", .contextAware, ab: true)
            var superseding = replacement
            superseding.idempotencyKey = "ca-held"
            _ = try await store.schedule(superseding)
            #expect(try await store.message(id: "ca-held")?.state == .superseded)

            let counts = try await store.campaignCounts(bundleID: "com.example.app", campaignID: "welcome",
                                                        createdFrom: nil, createdBefore: now + 1)
            let tr = try #require(counts.first { $0.deliveryMethod == .traditional && $0.abTest })
            #expect((tr.scheduled, tr.deferred, tr.suppressed, tr.sent) == (4, 2, 1, 1))
            let ca = try #require(counts.first { $0.deliveryMethod == .contextAware && $0.abTest })
            #expect((ca.scheduled, ca.deferred, ca.suppressed) == (1, 0, 0))
            let all = try await store.campaignCounts(bundleID: "com.example.app", campaignID: "welcome", createdFrom: nil, createdBefore: nil)
            #expect(all.first { $0.deliveryMethod == .traditional && $0.abTest }?.deferred == 3)
        }
    }
}
