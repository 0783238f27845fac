import Foundation
import HeraldCore
import Testing
@testable import HeraldStorage

/// The dispatcher's batched writes (`claim(ids:now:)`, `transitions(_:)`,
/// `devices(of:)`) on both stores.
@Suite("Store contract: batched claims and push ends", .storeCaseLimit)
struct BatchClaimTests {
    /// A handed-off message (claimed, its handoff ended HANDED_OFF), waiting for its fallback.
    static func handOff(_ store: any ContractStore, key: String) async throws -> StoredMessage {
        let message = makeMessage(key: key, method: .contextAware)
        _ = try await store.schedule(message)
        let claimed = try #require(try await store.claim(id: message.id, from: .scheduled, now: now))
        #expect(claimed.sendingSince == now && claimed.attempts == 1 && claimed.sendStartedAt == now && claimed.pushStartedAt == now)
        #expect(try await store.message(id: message.id) == claimed)
        #expect(try await store.transition(id: message.id, from: .scheduled, to: .handedOff, dueAt: message.windowEnd,
                                           providerMessageID: nil, lastError: nil, now: now))
        return message
    }

    @Test(arguments: StoreKind.all) func aBatchClaimsOnlyTheMessagesStillWaiting(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let waiting = makeMessage(key: "waiting")
            let cancelled = makeMessage(key: "cancelled")
            let superseded = makeMessage(key: "replaced")
            let replacement = makeMessage(key: "replaced", createdAt: now + 1)
            let inFlight = makeMessage(key: "in-flight")
            for message in [waiting, cancelled, superseded, replacement, inFlight] { _ = try await store.schedule(message) }
            _ = try await store.cancel(bundleID: cancelled.bundleID, platform: .ios, userID: "user-1", campaignID: "welcome",
                                       idempotencyKey: "cancelled", now: now)
            _ = try #require(try await store.claim(id: inFlight.id, from: .scheduled, now: now))
            let handedOff = try await Self.handOff(store, key: "handed-off")
            let displayed = try await Self.handOff(store, key: "displayed")
            #expect(try await store.transition(id: displayed.id, from: .handedOff, to: .displayed, dueAt: nil, providerMessageID: nil,
                                               lastError: nil, now: now + 1))

            let ids = [waiting.id, cancelled.id, superseded.id, inFlight.id, handedOff.id, displayed.id, "no-such-id", replacement.id]
            let claimed = try await store.claim(ids: ids, now: now + 10)
            // In the order asked, each in its pre-claim state, marked in flight.
            #expect(claimed.map(\.id) == [waiting.id, handedOff.id, replacement.id])
            #expect(claimed.map(\.state) == [.scheduled, .handedOff, .scheduled])
            #expect(claimed.allSatisfy { $0.sendingSince == now + 10 })
            // What a claim returns is the row as it now stands (the handed-off
            // one claimed a second time: two attempts, its first send kept).
            for message in claimed { #expect(try await store.message(id: message.id) == message) }
            #expect(claimed.map(\.attempts) == [1, 2, 1])
            #expect(claimed[1].sendStartedAt == now && claimed[1].pushStartedAt == now + 10 && claimed[1].updatedAt == now + 10)
            // The others are untouched: no claim, no attempt counted.
            let cancelledNow = try #require(try await store.message(id: cancelled.id))
            #expect(cancelledNow.state == .cancelled && !cancelledNow.isSending && cancelledNow.attempts == 0)
            #expect(try await store.message(id: superseded.id)?.state == .superseded)
            let inFlightNow = try #require(try await store.message(id: inFlight.id))
            #expect(inFlightNow.sendingSince == now && inFlightNow.attempts == 1)
            #expect(try await store.claim(id: inFlight.id, from: .scheduled, now: now + 10) == nil)
            #expect(try await store.message(id: displayed.id)?.isSending == false)
            // Claimed once: a second batch finds nothing to claim.
            #expect(try await store.claim(ids: ids, now: now + 20).isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func batchedEndsApplyEachAndAnIllegalOneWritesNothing(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let a = makeMessage(key: "a"), b = makeMessage(key: "b")
            for message in [a, b] { _ = try await store.schedule(message) }
            #expect(try await store.claim(ids: [a.id, b.id], now: now).count == 2)
            let outcome = DeviceOutcome(messageID: a.id, deviceToken: "t-a", kind: .sent, providerMessageID: "apns-a", reason: nil, at: now + 1)
            // An illegal change among them: refused before any write, outcomes included.
            await #expect(throws: StoreError.self) {
                try await store.transitions([
                    Transition(id: a.id, from: .scheduled, to: .sent, providerMessageID: "apns-a", now: now + 1, outcomes: [outcome]),
                    Transition(id: b.id, from: .sent, to: .scheduled, now: now + 1),
                ])
            }
            #expect(try await store.outcomes(messageID: a.id).isEmpty)
            #expect(try await store.message(id: a.id)?.isSending == true)
            // b's `from` is stale (it is SCHEDULED, not HANDED_OFF): only a moves on.
            let applied = try await store.transitions([
                Transition(id: a.id, from: .scheduled, to: .sent, providerMessageID: "apns-a", now: now + 1, outcomes: [outcome]),
                Transition(id: b.id, from: .handedOff, to: .sent, now: now + 1),
            ])
            #expect(applied == [true, false])
            let sent = try #require(try await store.message(id: a.id))
            #expect(sent.state == .sent && !sent.isSending && sent.providerMessageID == "apns-a")
            #expect(try await store.outcomes(messageID: a.id).map(\.deviceToken) == ["t-a"])
            #expect(try await store.message(id: b.id)?.state == .scheduled)
            #expect(try await store.transitions([]).isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func devicesOfManyUsersInTheirOrder(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            for (user, token) in [("u1", "t1b"), ("u1", "t1a"), ("u2", "t2")] {
                _ = try await store.registerDevice(Device(
                    bundleID: "com.example.app", platform: .ios, userID: user, deviceToken: token, locale: "en",
                    timezone: "UTC", environment: .production, registeredAt: now))
            }
            let users = ["u2", "nobody", "u1"].map { DeviceUser(bundleID: "com.example.app", platform: .ios, userID: $0) }
            let devices = try await store.devices(of: users)
            #expect(devices.map { $0.map(\.deviceToken) } == [["t2"], [], ["t1a", "t1b"]])
        }
    }
}
