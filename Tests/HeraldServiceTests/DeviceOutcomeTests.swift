import APNs
import APNsProvider
import HeraldCore
import HeraldStorage
import Testing

@testable import HeraldService

@Suite("Device outcomes: one mapping from APNs answers, revoke records, the stored-request decoder")
struct DeviceOutcomeTests {
    static let refusals: [(status: Int, reason: APNsReason?, kind: DeviceOutcomeKind)] = [
        (410, .unregistered, .unregistered),
        (410, nil, .unregistered),  // 410 is Unregistered whatever the body says
        (410, .expiredToken, .unregistered),
        (400, .badDeviceToken, .badDeviceToken),
        (400, .badTopic, .rejected),
        (400, .deviceTokenNotForTopic, .rejected),
        (413, .payloadTooLarge, .rejected),
        (429, .tooManyRequests, .rejected),
        (500, nil, .rejected),
        (400, APNsReason(rawValue: "SomethingNew"), .rejected),
    ]

    @Test("APNs refusal → outcome kind", arguments: refusals)
    func refusal(status: Int, reason: APNsReason?, kind: DeviceOutcomeKind) {
        let response = APNsResponse(status: status, apnsID: nil, reason: reason)
        #expect(DeviceOutcomeKind(refusal: response) == kind)
        #expect(DeviceOutcomeKind(refusal: response).dropsDevice == (kind != .rejected))
    }

    static let results: [(Dispatcher.DeviceResult, DeviceOutcomeKind, String?)] = [
        (.delivered(providerMessageID: "id-1", attempts: 2), .sent, nil),
        (.refused(.unregistered, reason: "Unregistered", status: 410, attempts: 1), .unregistered, "Unregistered"),
        (.refused(.rejected, reason: "BadTopic", status: 400, attempts: 1), .rejected, "BadTopic"),
        (.expired, .expired, nil),
        (.failed("no APNs route"), .failed, "no APNs route"),
        (.interrupted, .failed, "interrupted by shutdown"),
    ]

    @Test("device result → outcome, and its revoke record", arguments: results)
    func outcome(result: Dispatcher.DeviceResult, kind: DeviceOutcomeKind, reason: String?) {
        let device = Device(bundleID: "b", platform: .ios, userID: "u", deviceToken: "t", locale: "en", timezone: "UTC",
                            environment: .sandbox, registeredAt: 1)
        let outcome = result.outcome(messageID: "m", device: device, delivered: .sent, at: 7)
        #expect(outcome.kind == kind && outcome.reason == reason && outcome.at == 7)
        #expect(outcome.providerMessageID == (kind == .sent ? "id-1" : nil))
        #expect(outcome.environment == .sandbox)
        #expect(outcome.httpStatus == [.sent: 200, .unregistered: 410, .rejected: 400][kind])
        #expect(outcome.attempts == [.sent: 2, .unregistered: 1, .rejected: 1][kind])
        let revoke = result.revokeOutcome(messageID: "m", device: device, at: 7)
        if kind == .sent {
            #expect(revoke.kind == .revoked && revoke.reason == nil)
        } else {
            #expect(revoke.kind == .revokeFailed)
            #expect(revoke.reason == kind.rawValue + (reason.map { ": \($0)" } ?? ""))
        }
    }

    @Test func theStoredRequestDecoderValidatesAndUsesTheStoredKeyWhenTheRequestHasNone() throws {
        let bytes = DispatcherTests.requestBytes(bundle: "com.example.decode", key: "k-1", ttl: 60)
        let message = try StoredRequest.decode(bytes, idempotencyKey: "ignored: the request has one")
        #expect(message.bundleID == "com.example.decode" && message.idempotencyKey == "k-1")
        #expect(message.ttl.rawValue == 60)

        let keyless = DispatcherTests.requestBytes(bundle: "com.example.decode", key: "", ttl: nil)
        #expect(try StoredRequest.decode(keyless, idempotencyKey: "generated").idempotencyKey == "generated")
        #expect(throws: (any Error).self) { try StoredRequest.decode([0xFF, 0xFF, 0xFF], idempotencyKey: nil) }
    }
}
