import HeraldCore
import HeraldStorage
import Testing

@testable import HeraldService

/// The dispatcher carrying out the delivery policy's per-device answers
/// (``DeliveryPolicy``), against the real store and the bundled simulator.
@Suite("Dispatcher carrying out the delivery policy", .timeLimit(.minutes(1)))
struct DispatcherPolicyTests {
    @Test func aPlatformDisabledByItsOverrideFailsEveryDeviceUnsent() async throws {
        let rig = try await DispatcherTests.rig(decode: { bytes, key in
            var message = try StoredRequest.decode(bytes, idempotencyKey: key)
            message.ios = ["enabled": false]
            return message
        })
        defer { Task { await rig.close() } }
        try await DispatcherTests.register(rig)
        try await DispatcherTests.register(rig, token: String(repeating: "d8", count: 32))
        let message = try await DispatcherTests.schedule(rig, key: "disabled", ttl: nil)
        await rig.dispatcher.dispatch(message.id)
        let stored = try #require(try await rig.store.message(id: message.id))
        #expect(stored.state == .failed && !stored.isSending)
        let reason = "render: ios delivery is disabled by the ios override (enabled: false)"
        #expect(stored.lastError == "c7c7c7c7…: \(reason); d8d8d8d8…: \(reason)"
            || stored.lastError == "d8d8d8d8…: \(reason); c7c7c7c7…: \(reason)")
        let outcomes = try await rig.store.outcomes(messageID: message.id)
        #expect(outcomes.count == 2 && outcomes.allSatisfy { $0.kind == .failed && $0.reason == reason })
        #expect(rig.gateway.simulator?.deliveredCount == 0)
    }
}
