import Foundation
import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldStorage

@Suite("Online backup", .timeLimit(.minutes(1)))
struct BackupTests {
    // MARK: hostile first

    @Test("an existing destination is refused and left exactly as it was")
    func refusesToOverwrite() async throws {
        try await withStore { store, path in
            _ = try await store.schedule(makeMessage(id: "m1", key: "k1"))
            let destination = POSIXFileHelpers.directory(of: path) + "/existing.bak"
            let original = Data("precious".utf8)
            _ = FileManager.default.createFile(atPath: destination, contents: original)
            #expect(throws: BackupError.destinationExists(path: destination)) {
                try StoreBackup.copy(databaseAt: path, to: destination)
            }
            #expect(FileManager.default.contents(atPath: destination) == original)
        }
    }

    @Test("no store, not a database, a missing destination directory: refused, nothing left behind")
    func refusesBadPaths() async throws {
        try await withTemporaryDirectory { dir in
            let missing = dir + "/nothing.sqlite"
            #expect(throws: BackupError.self) { try StoreBackup.copy(databaseAt: missing, to: dir + "/a.bak") }
            #expect(!FileManager.default.fileExists(atPath: dir + "/a.bak"))

            let text = dir + "/text.sqlite"
            _ = FileManager.default.createFile(atPath: text, contents: Data("not sqlite at all, longer than 16".utf8))
            #expect(throws: BackupError.noStore(path: text, detail: "not an SQLite database")) {
                try StoreBackup.copy(databaseAt: text, to: dir + "/b.bak")
            }
            #expect(!FileManager.default.fileExists(atPath: dir + "/b.bak"))

            #expect(throws: BackupError.self) { try StoreBackup.copy(databaseAt: dir, to: dir + "/c.bak") }
            let store = try SQLiteStore(path: dir + "/herald.sqlite")
            await store.close()
            do {
                _ = try StoreBackup.copy(databaseAt: dir + "/herald.sqlite", to: dir + "/no/such/dir/d.bak")
                Issue.record("a destination in a missing directory must fail")
            } catch let error as BackupError {
                guard case .cannotCreate = error else { Issue.record("\(error)"); return }
            }
        }
    }

    // MARK: happy

    @Test("a copy taken while writes go on holds every write committed before it, opens as a store, one file")
    func copyWhileWriting() async throws {
        try await withStore { store, path in
            let device = Device(bundleID: "com.example.app", platform: .ios, userID: "user-1", deviceToken: "aa",
                                locale: "en", timezone: "UTC", environment: .sandbox, registeredAt: now)
            _ = try await store.registerDevice(device)
            try await store.importMessages((0..<2_000).map { makeMessage(id: "before-\($0)", key: "kb-\($0)") })
            try await store.recordOutcome(DeviceOutcome(messageID: "before-0", deviceToken: "aa", kind: .sent, at: now))
            // Writes keep committing while the copy runs.
            let writer = Task {
                var i = 0
                while !Task.isCancelled && i < 5_000 {
                    // Cancelled mid-write: abandoned, nothing stored; stop.
                    do { _ = try await store.schedule(makeMessage(id: "during-\(i)", key: "kd-\(i)")) } catch { break }
                    i += 1
                }
                return i
            }
            let destination = POSIXFileHelpers.directory(of: path) + "/copy.bak"
            let summary = try StoreBackup.copy(databaseAt: path, to: destination)
            writer.cancel()
            _ = await writer.value
            #expect(summary.messages >= 2_000 && summary.devices == 1 && summary.outcomes == 1)
            #expect(summary.schemaVersion == SQLiteStore.schemaVersion)
            #expect(summary.pages > 0 && summary.pageSize > 0)
            #expect(summary.description.contains("\(summary.messages) messages, 1 devices"))
            // One self-contained file: no WAL beside it, rollback-journal header.
            #expect(!FileManager.default.fileExists(atPath: destination + "-wal"))
            let header = try #require(FileManager.default.contents(atPath: destination))
            #expect(header.count > 20 && header[18] == 1 && header[19] == 1)

            let restored = try SQLiteStore(path: destination)
            #expect(try await restored.message(id: "before-1999")?.idempotencyKey == "kb-1999")
            #expect(try await restored.outcomes(messageID: "before-0").count == 1)
            #expect(try await restored.devices(bundleID: "com.example.app", platform: .ios, userID: "user-1") == [device])
            let total = try await restored.countsByState().values.reduce(0, +)
            #expect(total == summary.messages)
            await restored.close()
        }
    }
}

enum POSIXFileHelpers {
    static func directory(of path: String) -> String { (path as NSString).deletingLastPathComponent }
}
