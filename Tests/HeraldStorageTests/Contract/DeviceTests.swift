import HeraldCore
import HeraldPrimitives
import Testing
@testable import HeraldStorage

@Suite("Store contract: devices", .storeCaseLimit)
struct DeviceTests {
    func device(_ token: String, user: String = "user-1", locale: String = "en-US", at: Int64 = now) -> Device {
        Device(bundleID: "com.example.app", platform: .ios, userID: user, deviceToken: token,
               locale: locale, timezone: "Europe/Berlin", environment: .sandbox, registeredAt: at)
    }

    @Test(arguments: StoreKind.all) func upsertKeyedByBundleAndToken(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            #expect(try await store.registerDevice(device("aa")))
            #expect(try await store.registerDevice(device("bb")))
            #expect(try await !(store.registerDevice(device("aa", locale: "de-DE", at: now + 500))))

            let devices = try await store.devices(bundleID: "com.example.app", platform: .ios, userID: "user-1")
            #expect(devices.map(\.deviceToken) == ["aa", "bb"])
            let aa = try #require(devices.first)
            #expect(aa.locale == "de-DE" && aa.registeredAt == now && aa.updatedAt == now + 500)
            #expect(try await store.devices(bundleID: "com.example.app", platform: .android, userID: "user-1").isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func tokenMovesToAnotherUser(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            _ = try await store.registerDevice(device("aa"))
            _ = try await store.registerDevice(device("aa", user: "user-2", at: now + 1))
            #expect(try await store.devices(bundleID: "com.example.app", platform: .ios, userID: "user-1").isEmpty)
            #expect(try await store.devices(bundleID: "com.example.app", platform: .ios, userID: "user-2").count == 1)
        }
    }

    @Test(arguments: StoreKind.all) func androidDeviceHasNoEnvironment(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let android = Device(bundleID: "com.example.app", platform: .android, userID: "u", deviceToken: "fcm-token",
                                 locale: "en", timezone: "UTC", environment: nil, registeredAt: now)
            _ = try await store.registerDevice(android)
            #expect(try await store.devices(bundleID: "com.example.app", platform: .android, userID: "u") == [android])
        }
    }

    @Test(arguments: StoreKind.all) func unregister(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            _ = try await store.registerDevice(device("aa"))
            #expect(try await store.unregisterDevice(bundleID: "com.example.app", deviceToken: "aa"))
            #expect(try await !(store.unregisterDevice(bundleID: "com.example.app", deviceToken: "aa")))
        }
    }

    @Test(arguments: StoreKind.all) func unregisteredByAPNsOnlyIfOlderThanItsTimestamp(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            _ = try await store.registerDevice(device("aa", at: now))
            // Re-registered after APNs saw it unregistered: keep it.
            #expect(try await !(store.removeDevice(bundleID: "com.example.app", deviceToken: "aa", ifRegisteredBefore: now - 1)))
            #expect(try await !(store.removeDevice(bundleID: "com.example.app", deviceToken: "aa", ifRegisteredBefore: now)))
            #expect(try await store.removeDevice(bundleID: "com.example.app", deviceToken: "aa", ifRegisteredBefore: now + 1))
        }
    }
}
