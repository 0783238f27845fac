import Foundation
import GRPCEngine
import HeraldCore
import HeraldPrimitives
import HeraldProtos
import HeraldTestSupport
import Testing

@testable import HeraldService
@testable import HeraldStorage

/// Issue 26 item 6 through the read-side handlers (GetMessage,
/// ListMessages, CampaignReport) on a real SQLite store: WAITING devices
/// with `reason` and `not_before`, SUPPRESSED ones with their reason, the
/// DEFERRED / SUPPRESSED timeline, the SUPPRESSED filter and state, and the
/// per-cohort `deferred` / `suppressed` counts, in the wire messages.
@Suite("Read side of the delivery policy (handlers)", .timeLimit(.minutes(1)))
struct PolicyReadSideHandlerTests {
    static let bundle = "com.example.app"
    static let now: Int64 = 1_800_000_000_000
    static let policy = AccessPolicy()

    static func message(_ id: String, created: Int64 = now, state: MessageState = .scheduled) -> StoredMessage {
        StoredMessage(id: id, bundleID: bundle, platform: .ios, userID: "u1", campaignID: "c1", idempotencyKey: id,
                      deliveryMethod: .traditional, abTest: true, windowStart: now, windowEnd: now + 86_400_000, dueAt: now,
                      state: state, request: [1], createdAt: created)
    }

    static func waiting(_ id: String, _ token: String, _ reason: String, until: Int64, at: Int64) -> DeviceOutcome {
        DeviceOutcome(messageID: id, deviceToken: token, kind: .waiting, reason: reason, at: at, notBefore: until)
    }

    func withSeededStore(_ body: (SQLiteStore) async throws -> Void) async throws {
        try await withTemporaryDirectory { dir in
            let store = try SQLiteStore(path: dir + "/herald.sqlite")
            do {
                try await store.importMessages([Self.message("held"), Self.message("withheld", created: Self.now + 1)])
                // "held": aa waits for quiet hours, bb is capped, then held again and sent; cc is suppressed.
                _ = try await store.claim(id: "held", from: .scheduled, now: Self.now)
                #expect(try await store.hold(id: "held", from: .scheduled, now: Self.now + 1, recording: [
                    DeviceOutcome(messageID: "held", deviceToken: "cc", kind: .suppressed, reason: "local_time", at: Self.now + 1),
                    Self.waiting("held", "aa", "quiet_hours", until: Self.now + 7_200_000, at: Self.now + 1),
                    Self.waiting("held", "bb", "frequency_cap", until: Self.now + 3_600_000, at: Self.now + 1),
                ]))
                _ = try await store.claim(id: "held", from: .scheduled, now: Self.now + 3_600_000)
                #expect(try await store.hold(id: "held", from: .scheduled, now: Self.now + 3_600_001, recording: [
                    DeviceOutcome(messageID: "held", deviceToken: "bb", kind: .sent, providerMessageID: "p-bb", at: Self.now + 3_600_001),
                ] + [Self.waiting("held", "aa", "quiet_hours", until: Self.now + 7_200_000, at: Self.now + 3_600_001)]))
                // "withheld": every device suppressed → SUPPRESSED.
                _ = try await store.claim(id: "withheld", from: .scheduled, now: Self.now + 10)
                #expect(try await store.transition(
                    id: "withheld", from: .scheduled, to: .suppressed, dueAt: nil, providerMessageID: nil,
                    lastError: "withheld by the delivery policy: dd…: frequency_cap", now: Self.now + 10, recording: [
                        DeviceOutcome(messageID: "withheld", deviceToken: "dd", kind: .suppressed, reason: "frequency_cap", at: Self.now + 10),
                    ]))
                try await body(store)
                await store.close()
            } catch {
                await store.close()
                throw error
            }
        }
    }

    static func getRequest(_ id: String) -> GRPCRequest {
        let arena = CArena()
        var request = Herald__V1__GetMessageRequest.initialized()
        request.bundle_id = arena.string(bundle)
        request.message_id = arena.string(id)
        return GRPCRequest(path: GetMessageService.path, message: withExtendedLifetime(arena) { ProtobufC.pack(&request) })
    }

    struct Delivery: Equatable {
        var token: String
        var outcome: Herald__V1__DeviceOutcome
        var reason: String
        var notBefore: String
    }

    @Test func getMessageShowsEachDevicesLatestWaitingStateAndTheTimeline() async throws {
        try await withSeededStore { store in
            let bytes = try await GetMessageService(policy: Self.policy, store: store).get(Self.getRequest("held"))
            let (state, devices, timeline) = try ProtobufC.withUnpacked(Herald__V1__GetMessageResponse.self, from: bytes) { wire in
                let devices = (0..<wire.n_devices).map { i in
                    let d = wire.devices[i]!.pointee
                    return Delivery(token: String(cString: d.device_token), outcome: d.outcome, reason: String(cString: d.reason),
                                    notBefore: String(cString: d.not_before))
                }
                let timeline = (0..<wire.n_timeline).map { i in
                    (wire.timeline[i]!.pointee.event, String(cString: wire.timeline[i]!.pointee.reason))
                }
                return (wire.message.pointee.state, devices, timeline)
            }
            #expect(state == HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_SCHEDULED)
            let until = RFC3339.format(Timestamp(milliseconds: Self.now + 7_200_000))
            // bb's WAITING row is replaced by its SENT one; aa's first WAITING by its second.
            #expect(devices == [
                Delivery(token: "cc", outcome: HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_SUPPRESSED, reason: "local_time", notBefore: ""),
                Delivery(token: "bb", outcome: HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_SENT, reason: "", notBefore: ""),
                Delivery(token: "aa", outcome: HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_WAITING, reason: "quiet_hours", notBefore: until),
            ])
            #expect(timeline.map(\.0) == [
                HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_SCHEDULED, HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_DEFERRED,
                HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_SUPPRESSED, HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_DEFERRED,
            ])
            let capUntil = RFC3339.format(Timestamp(milliseconds: Self.now + 3_600_000))
            #expect(timeline[1].1 == "quiet_hours until \(until); frequency_cap until \(capUntil)")
            #expect(timeline[2].1 == "local_time")
            #expect(timeline[3].1 == "quiet_hours until \(until)")
        }
    }

    @Test func aSuppressedMessageReadsSuppressedInGetListAndReport() async throws {
        try await withSeededStore { store in
            let bytes = try await GetMessageService(policy: Self.policy, store: store).get(Self.getRequest("withheld"))
            let (state, timeline) = try ProtobufC.withUnpacked(Herald__V1__GetMessageResponse.self, from: bytes) { wire in
                (wire.message.pointee.state, (0..<wire.n_timeline).map { wire.timeline[$0]!.pointee.event })
            }
            #expect(state == HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_SUPPRESSED)
            #expect(timeline == [HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_SCHEDULED, HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_SUPPRESSED])

            let arena = CArena()
            var list = Herald__V1__ListMessagesRequest.initialized()
            list.bundle_id = arena.string(Self.bundle)
            list.user_id = arena.string("u1")
            var states = [HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_SUPPRESSED]
            let listBytes = states.withUnsafeMutableBufferPointer { buffer in
                list.n_states = 1
                list.states = buffer.baseAddress
                return withExtendedLifetime(arena) { ProtobufC.pack(&list) }
            }
            let listAnswer = try await ListMessagesService(policy: Self.policy, store: store)
                .list(GRPCRequest(path: ListMessagesService.path, message: listBytes))
            let listed = try ProtobufC.withUnpacked(Herald__V1__ListMessagesResponse.self, from: listAnswer) { wire in
                (0..<wire.n_messages).map { String(cString: wire.messages[$0]!.pointee.message_id) }
            }
            #expect(listed == ["withheld"])

            var report = Herald__V1__CampaignReportRequest.initialized()
            report.bundle_id = arena.string(Self.bundle)
            report.campaign_id = arena.string("c1")
            let request = GRPCRequest(path: CampaignReportService.path, message: withExtendedLifetime(arena) { ProtobufC.pack(&report) })
            let reportBytes = try await CampaignReportService(policy: Self.policy, store: store).report(request)
            let cohorts = try ProtobufC.withUnpacked(Herald__V1__CampaignReportResponse.self, from: reportBytes) { wire in
                (0..<wire.n_cohorts).map { i in
                    let c = wire.cohorts[i]!.pointee
                    return (c.scheduled, c.deferred, c.suppressed)
                }
            }
            #expect(cohorts.count == 1)
            #expect(cohorts.first.map { [$0.0, $0.1, $0.2] } == [2, 1, 1])
        }
    }

    @Test func theWireNamesEveryNewValue() {
        #expect(MessageState.suppressed.wire == HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_SUPPRESSED)
        #expect(MessageState(wire: HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_SUPPRESSED) == .suppressed)
        #expect(DeviceOutcomeKind.waiting.deliveryWire == HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_WAITING)
        #expect(DeviceOutcomeKind.suppressed.deliveryWire == HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_SUPPRESSED)
        // Every state has a wire value of its own.
        #expect(Set(MessageState.allCases.map(\.wire.rawValue)).count == MessageState.allCases.count)
    }
}
