import HeraldCore
import Testing
@testable import HeraldStorage

/// Schedule's one path on every store, the callback form
/// (`CallbackScheduling`, what the Schedule RPC calls): it answers what the
/// awaited form answers — last request wins, a spent key is ALREADY_EXISTS
/// (AbandonedWriteContractTests) — and the device read for the answer's
/// warnings hands over the user's devices.
@Suite("Store contract: Schedule through the callback", .storeCaseLimit)
struct CallbackScheduleContractTests {
    /// Schedules `message` through the callback and waits for its one answer.
    static func viaCallback(_ store: any ContractStore, _ message: StoredMessage) async -> Result<ScheduleOutcome, any Error> {
        await withCheckedContinuation { continuation in
            _ = store.schedule(message, deadline: nil) { continuation.resume(returning: $0) }
        }
    }

    /// The devices `devices(of:)` hands over for `message`'s user.
    static func devices(_ store: any ContractStore, of message: StoredMessage) async -> [String] {
        await withCheckedContinuation { continuation in
            store.devices(of: message) { devices in continuation.resume(returning: devices().map(\.deviceToken)) }
        }
    }

    @Test(arguments: StoreKind.all)
    func callbackSchedulesKeepLastRequestWinsAndTheDeviceReadAnswersTheUsersDevices(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            _ = try await store.registerDevice(Device(
                bundleID: "com.example.app", platform: .ios, userID: "user-1", deviceToken: "t1",
                locale: "en", timezone: "UTC", environment: .sandbox, registeredAt: now, updatedAt: now))
            let first = makeMessage(key: "k"), second = makeMessage(key: "k", createdAt: now + 1)
            #expect(try await Self.viaCallback(store, first).get() == .scheduled(first, supersededID: nil))
            #expect(try await Self.viaCallback(store, second).get() == .scheduled(second, supersededID: first.id))
            #expect(try await store.message(id: first.id)?.state == .superseded)
            #expect(try await store.message(bundleID: "com.example.app", idempotencyKey: "k") == second)
            #expect(await Self.devices(store, of: second) == ["t1"])
            #expect(await Self.devices(store, of: makeMessage(userID: "nobody")).isEmpty)
        }
    }
}
