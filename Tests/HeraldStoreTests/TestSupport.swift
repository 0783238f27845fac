import Foundation
import HeraldCore
@testable import HeraldStore

/// A fresh temporary directory, removed after `body`.
func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    let dir = FileManager.default.temporaryDirectory
        .appendingPathComponent("herald-store-tests-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    return try await body(dir)
}

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

/// A flag set on one thread and polled (with `Task.yield`, no sleeping) on another.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.lock(); value = true; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
}
