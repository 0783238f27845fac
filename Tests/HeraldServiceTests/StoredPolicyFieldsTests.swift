import HeraldCore
import HeraldProtos
import Testing

@testable import HeraldService

/// Issue 26: Schedule's `local_send_time` (field 16) and `transactional`
/// (field 17) are kept in what Schedule stores and decoded from the stored
/// bytes into the `PushMessage` the dispatcher reads at claim time (so they
/// survive a restart); a stored time that no longer parses fails the decode
/// by name, as any stored field that no longer validates.
@Suite("Stored request: the delivery policy's fields")
struct StoredPolicyFieldsTests {
    /// `field 16: text` and `field 17: true`, appended (protobuf merges them).
    static func policyFields(_ text: String, transactional: Bool) -> [UInt8] {
        let bytes = Array(text.utf8)
        precondition(bytes.count < 128)
        return [0x82, 0x01, UInt8(bytes.count)] + bytes + (transactional ? [0x88, 0x01, 0x01] : [])
    }

    static func stored(_ extra: [UInt8]) -> [UInt8] {
        let request = DispatcherTests.requestBytes(bundle: "com.example.policy", key: "k-1", ttl: 60) + extra
        // What ScheduleService stores for an iOS message.
        return ProtobufC.cleaned(Herald__V1__ScheduleRequest.self, request, droppingNumbers: ScheduleService.androidField)
    }

    @Test func aStoredTimeThatNoLongerParsesFailsTheDecodeByName() {
        for text in ["24:00", "7:05", "07:05:00", "٠٧:٠٥"] {
            do {
                _ = try StoredRequest.decode(Self.stored(Self.policyFields(text, transactional: false)), idempotencyKey: nil)
                Issue.record("\(text) decoded")
            } catch {
                #expect("\(error)".contains("local_send_time"), "\(error)")
            }
        }
    }

    @Test func bothFieldsAreStoredAndDecodedForTheDispatcher() throws {
        let message = try StoredRequest.decode(Self.stored(Self.policyFields("07:05", transactional: true)), idempotencyKey: nil)
        #expect(message.localSendTime == LocalSendTime(hour: 7, minute: 5))
        #expect(message.transactional)
        let plain = try StoredRequest.decode(Self.stored([]), idempotencyKey: nil)
        #expect(plain.localSendTime == nil && !plain.transactional)
        // The rest of the message is as before.
        #expect(message.bundleID == plain.bundleID && message.ttl == plain.ttl && message.content == plain.content)
    }
}
