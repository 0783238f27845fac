import APNs
import GRPCEngine
import HeraldCore
import HeraldProtos
import HeraldStorage
import HeraldTestSupport
import Testing

@testable import HeraldService

/// The handlers and the delivery wiring in process (no sockets): an
/// in-memory store, a fake APNs gateway, a manual clock. Hostile cases
/// first; every wait is on an event (a send, a state), never a sleep.
@Suite("Delivery wiring: handlers → store → scheduler → gateway", .timeLimit(.minutes(1)))
struct DeliveryWiringTests {
    typealias Wiring = DeliveryWiring

    @Test("no token is UNAUTHENTICATED; a token for another bundle is PERMISSION_DENIED; nothing is stored")
    func authRefused() async throws {
        let policy = AccessPolicy(grants: [.init(label: "ops", token: "secret-ops", bundleIDs: ["com.example.other"])])
        let wiring = Wiring(policy: policy)
        let schedule = Wiring.schedule(key: "k1")
        #expect(await wiring.status(ScheduleService.path, schedule)?.code == .unauthenticated)
        #expect(await wiring.status(ScheduleService.path, schedule, token: "wrong")?.code == .unauthenticated)
        let denied = await wiring.status(ScheduleService.path, schedule, token: "secret-ops")
        #expect(denied?.code == .permissionDenied)
        #expect(denied?.message.contains(Wiring.bundle) == true)
        #expect(await wiring.status(CancelService.path, Wiring.cancel(key: "k1"), token: "secret-ops")?.code == .permissionDenied)
        #expect(await wiring.store.allMessages.isEmpty)
        // The same token on its own bundle is let through.
        let own = Wiring.schedule(key: "k1", bundle: "com.example.other")
        #expect(await wiring.status(ScheduleService.path, own, token: "secret-ops") == nil)
    }

    @Test("bad input is INVALID_ARGUMENT naming the field, and stores nothing")
    func badInputNamesTheField() async throws {
        let wiring = Wiring()
        let noUser = await wiring.status(ScheduleService.path, Wiring.schedule(key: "k1", user: ""))
        #expect(noUser?.code == .invalidArgument)
        #expect(noUser?.message.contains("user_id") == true)
        let badBundle = await wiring.status(ScheduleService.path, Wiring.schedule(key: "k1", bundle: "no spaces allowed"))
        #expect(badBundle?.code == .invalidArgument)
        #expect(badBundle?.message.contains("bundle_id") == true)
        let noKey = await wiring.status(CancelService.path, Wiring.cancel(key: ""))
        #expect(noKey?.code == .invalidArgument)
        #expect(noKey?.message.contains("idempotency_key") == true)
        let garbage = await wiring.status(ScheduleService.path, [0xFF, 0xFF, 0xFF])
        #expect(garbage?.code == .invalidArgument)
        #expect(await wiring.store.allMessages.isEmpty)
        #expect(await wiring.scheduler.pendingCount == 0)
    }

    @Test("Cancel of an unknown key is NOT_FOUND")
    func cancelUnknownKey() async throws {
        let wiring = Wiring()
        let status = await wiring.status(CancelService.path, Wiring.cancel(key: "never-scheduled"))
        #expect(status?.code == .notFound)
        #expect(status?.message.contains("never-scheduled") == true)
    }

    @Test("Schedule is stored, waits for its time, goes out through the gateway, and its outcome is recorded")
    func scheduleDispatchesThroughTheGateway() async throws {
        let wiring = Wiring()
        try await wiring.registerDevice()
        try await wiring.withDelivery {
            let scheduled = try await wiring.schedule(key: "k1")
            #expect(scheduled.state == HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_SCHEDULED)
            let stored = try #require(try await wiring.store.message(id: scheduled.messageID))
            #expect(stored.state == .scheduled)
            #expect(stored.dueAt == Wiring.start + 60_000)
            #expect(await wiring.scheduler.pendingCount == 1)
            #expect(wiring.gateway.sent.isEmpty)  // the clock has not reached it

            wiring.advance()
            let sent = try #require(await wiring.gateway.next(1).first)
            #expect(sent.deviceToken == Wiring.deviceToken)
            #expect(sent.header("apns-topic") == Wiring.bundle)
            #expect(sent.payloadText.contains("\"title\":\"Hello\""))
            let done = await wiring.store.waitFor(id: scheduled.messageID) { $0.state == .sent }
            #expect(done.providerMessageID == sent.header("apns-id"))
            let outcomes = try await wiring.store.outcomes(messageID: scheduled.messageID)
            #expect(outcomes.map(\.kind) == [.sent])
            #expect(outcomes.map(\.deviceToken) == [Wiring.deviceToken])
            // The crash rule's mark was written (through the hand-over log) and dropped when the push ended.
            #expect(try await wiring.store.handOvers(messageID: scheduled.messageID, push: Wiring.start + 60_000).isEmpty)
        }
    }

    @Test("APNs 410 Unregistered: the device is removed and the message FAILED with the reason")
    func unregisteredDeviceFails() async throws {
        let wiring = Wiring()
        try await wiring.registerDevice()
        wiring.gateway.answer(Wiring.deviceToken, with: APNsResponse(
            status: 410, apnsID: nil, reason: .unregistered, timestampMilliseconds: Wiring.start + 1))
        try await wiring.withDelivery {
            let scheduled = try await wiring.schedule(key: "k1")
            wiring.advance()
            let failed = await wiring.store.waitFor(id: scheduled.messageID) { $0.state == .failed }
            #expect(failed.lastError?.contains("Unregistered") == true)
            #expect(try await wiring.store.devices(bundleID: Wiring.bundle, platform: .ios, userID: "u1").isEmpty)
        }
    }

    @Test("Cancel by idempotency key: CANCELLED, unscheduled, never sent")
    func cancelByKey() async throws {
        let wiring = Wiring()
        try await wiring.registerDevice()
        try await wiring.withDelivery {
            let cancelled = try await wiring.schedule(key: "cancel-me")
            let answer = try await wiring.cancel(key: "cancel-me")
            #expect(answer.cancelled)
            #expect(answer.state == HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_CANCELLED)
            #expect(try await wiring.store.message(id: cancelled.messageID)?.state == .cancelled)
            #expect(await wiring.scheduler.pendingCount == 0)
            // Idempotent.
            #expect(try await wiring.cancel(key: "cancel-me").cancelled)

            // A later message due after it goes out; the cancelled one never did.
            let sentinel = try await wiring.schedule(key: "sentinel", body: "sentinel", after: 61)
            wiring.advance(seconds: 61)
            _ = await wiring.store.waitFor(id: sentinel.messageID) { $0.state == .sent }
            #expect(wiring.gateway.sent.count == 1)
            #expect(wiring.gateway.sent.first?.payloadText.contains("sentinel") == true)
            #expect(try await wiring.store.message(id: cancelled.messageID)?.state == .cancelled)
        }
    }

    @Test("last request wins: a second Schedule with the key supersedes the first; only the second is sent")
    func lastRequestWins() async throws {
        let wiring = Wiring()
        try await wiring.registerDevice()
        try await wiring.withDelivery {
            let first = try await wiring.schedule(key: "k1", body: "first")
            #expect(!first.replaced)
            let second = try await wiring.schedule(key: "k1", body: "second")
            #expect(second.replaced)
            #expect(second.messageID != first.messageID)
            #expect(try await wiring.store.message(id: first.messageID)?.state == .superseded)
            #expect(await wiring.scheduler.pendingCount == 1)

            wiring.advance()
            _ = await wiring.store.waitFor(id: second.messageID) { $0.state == .sent }
            #expect(wiring.gateway.sent.count == 1)
            #expect(wiring.gateway.sent.first?.payloadText.contains("second") == true)
            #expect(try await wiring.store.message(id: first.messageID)?.state == .superseded)
        }
    }

    @Test("once sent, the key is spent: Schedule is ALREADY_EXISTS and Cancel reports SENT")
    func alreadyExistsOnceSent() async throws {
        let wiring = Wiring()
        try await wiring.registerDevice()
        try await wiring.withDelivery {
            let scheduled = try await wiring.schedule(key: "k1")
            wiring.advance()
            _ = await wiring.store.waitFor(id: scheduled.messageID) { $0.state == .sent }
            let again = await wiring.status(ScheduleService.path, Wiring.schedule(key: "k1", body: "again"))
            #expect(again?.code == .alreadyExists)
            #expect(again?.message.contains(scheduled.messageID) == true)
            let cancel = try await wiring.cancel(key: "k1")
            #expect(!cancel.cancelled)
            #expect(cancel.state == HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_SENT)
            #expect(wiring.gateway.sent.count == 1)
        }
    }

    @Test("ReportEvent DISPLAYED moves a SENT message to DISPLAYED and is recorded")
    func reportDisplayed() async throws {
        let wiring = Wiring()
        try await wiring.registerDevice()
        try await wiring.withDelivery {
            let scheduled = try await wiring.schedule(key: "k1")
            wiring.advance()
            _ = await wiring.store.waitFor(id: scheduled.messageID) { $0.state == .sent }
            #expect(try await wiring.reportDisplayed(key: "k1") == HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_DISPLAYED)
            #expect(try await wiring.store.message(id: scheduled.messageID)?.state == .displayed)
            let kinds = try await wiring.store.outcomes(messageID: scheduled.messageID).map(\.kind)
            #expect(kinds == [.sent, .displayed])
        }
    }

    @Test("context-aware: the handoff goes out at window start; Cancel then queues a revoke push, sent before shutdown completes")
    func handoffThenCancelRevokes() async throws {
        let wiring = Wiring()
        try await wiring.registerDevice()
        let scheduled = try await wiring.withDelivery {
            let scheduled = try await wiring.schedule(key: "k1", method: HERALD__V1__DELIVERY_METHOD__DELIVERY_METHOD_CONTEXT_AWARE)
            wiring.advance()
            let handoff = try #require(await wiring.gateway.next(1).first)
            #expect(handoff.header("apns-push-type") == "background")
            let handedOff = await wiring.store.waitFor(id: scheduled.messageID) { $0.state == .handedOff }
            #expect(handedOff.dueAt > Wiring.start + 60_000)  // the fallback, at window end
            #expect(await wiring.scheduler.pendingCount == 1)

            let cancel = try await wiring.cancel(key: "k1")
            #expect(cancel.cancelled)
            #expect(await wiring.scheduler.pendingCount == 0)  // no fallback
            let revoke = try #require(await wiring.gateway.next(1).first)
            #expect(revoke.header("apns-push-type") == "background")
            #expect(revoke.deviceToken == Wiring.deviceToken)
            return scheduled
        }
        // The graceful shutdown waited for the revoke in flight: it is done, not owed.
        #expect(try await wiring.store.pendingRevokes().isEmpty)
        #expect(try await wiring.store.message(id: scheduled.messageID)?.state == .cancelled)
        #expect(wiring.gateway.sent.count == 2)
    }

    @Test("delivery torn down by cancellation mid-push: left to the crash rule (UNCONFIRMED at the next start), never FAILED")
    func cancelledMidPushIsLeftToTheCrashRule() async throws {
        let wiring = Wiring()
        try await wiring.registerDevice()
        wiring.gateway.hold(Wiring.deviceToken)
        let scheduled = try await wiring.schedule(key: "k1")
        let delivery = Task {
            try await wiring.withDelivery {
                wiring.advance()
                let (never, keep) = AsyncStream<Void>.makeStream()
                for await _ in never {}  // until cancelled
                keep.finish()
            }
        }
        _ = await wiring.gateway.next(1)  // handed over (its mark written), no answer yet
        delivery.cancel()
        _ = try? await delivery.value
        let claimed = try #require(try await wiring.store.message(id: scheduled.messageID))
        #expect(claimed.state == .scheduled)
        #expect(claimed.sendingSince != nil)  // still claimed: resolved at the next start
        #expect(try await wiring.store.outcomes(messageID: scheduled.messageID).isEmpty)
        let recovery = try await wiring.store.recoverInterrupted(now: Wiring.start + 120_000)
        #expect(recovery.resumed == [scheduled.messageID])
        #expect(recovery.unconfirmedDevices == 1)
    }
}

