import Foundation
import HeraldCore
import HeraldTestSupport
@testable import HeraldStore

/// Opens a store on a fresh database in a temporary directory and closes it.
func withStore<T>(
    options: SQLiteStore.Options = SQLiteStore.Options(),
    _ body: (SQLiteStore, String) async throws -> T
) async throws -> T {
    try await withTemporaryDirectory { dir in
        let path = dir + "/herald.sqlite"
        let store = try SQLiteStore(path: path, options: options)
        do {
            let result = try await body(store, path)
            await store.close()
            return result
        } catch {
            await store.close()
            throw error
        }
    }
}

let now: Int64 = 1_800_000_000_000

func makeMessage(
    id: String = UUID().uuidString.lowercased(),
    bundleID: String = "com.example.app",
    platform: Platform = .ios,
    userID: String = "user-1",
    campaignID: String = "welcome",
    key: String? = "key-1",
    method: DeliveryMethod = .traditional,
    dueAt: Int64 = now + 30_000,
    state: MessageState = .scheduled,
    createdAt: Int64 = now,
    request: [UInt8] = Array("request-bytes".utf8)
) -> StoredMessage {
    StoredMessage(
        id: id, bundleID: bundleID, platform: platform, userID: userID, campaignID: campaignID,
        idempotencyKey: key, deliveryMethod: method, abTest: false,
        windowStart: now, windowEnd: now + 3_600_000, dueAt: dueAt, state: state,
        request: request, createdAt: createdAt)
}

func fileBytes(_ path: String) -> Data? {
    FileManager.default.contents(atPath: path)
}
