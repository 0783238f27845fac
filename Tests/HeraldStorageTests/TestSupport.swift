import Foundation
import HeraldCore
import HeraldTestSupport
@testable import HeraldStorage

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

/// Inserts `m` as builds before schema v6 did, into a database migrated to
/// an older version: no `funnel` column written, the INSERT trigger counts,
/// the provider message id in `apns_id` (its name before v8).
func insertBeforeV6(_ db: Database, _ m: StoredMessage) throws {
    let parameters = (1...21).map { "?\($0)" }.joined(separator: ", ")
    let columns = MessageRows.columns.replacingOccurrences(of: "provider_message_id", with: "apns_id")
        .replacingOccurrences(of: ", transactional", with: "")
    try db.run("INSERT INTO messages(\(columns)) VALUES (\(parameters))") {
        try MessageRows.bindThroughRequest(m, to: $0, after: 0)
    }
}

func fileBytes(_ path: String) -> Data? {
    FileManager.default.contents(atPath: path)
}

/// Holds the store's writer thread inside a write until `release` is
/// signalled, so that later writes queue behind it; returns once it is held.
func holdWriter(_ store: SQLiteStore) async -> (gate: Task<Void, any Error>, release: DispatchSemaphore) {
    let taken = Flag(), release = DispatchSemaphore(value: 0)
    let gate = Task {
        try await store.write { _ in
            taken.set()
            release.wait()
        }
    }
    while !taken.isSet { await Task.yield() }
    return (gate, release)
}
