import CInterop
import Foundation
import Testing
@testable import HeraldStorage

/// SQLite's page cache is pcache1 behind Herald's wrapper
/// (Sources/CInterop/sqlite_pcache.c), which skips a commit's truncate
/// when no page can be past the limit — and only then.
@Suite("SQLite page cache")
struct SQLitePageCacheTests {
    /// The lock page's number with 4 KiB pages: b-tree balancing parks a
    /// page there while it swaps two pages' numbers.
    static let lockPage: UInt32 = 1 << 18 + 1

    let methods: sqlite3_pcache_methods2

    init() throws {
        let path = NSTemporaryDirectory() + "herald-pcache-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try Database(path: path, create: true, busyTimeoutMs: 100)  // configures SQLite first
        methods = try #require(cinterop_sqlite_bounded_page_cache()).pointee  // installed
    }

    /// A cache of pages 1…count, each unpinned (kept).
    func cache(pages count: UInt32) throws -> OpaquePointer {
        let cache = try #require(methods.xCreate(4096, 8, 1))
        methods.xCachesize(cache, 100)
        for key in 1...count {
            let page = try #require(methods.xFetch(cache, key, 2))
            page.pointee.pBuf.storeBytes(of: key, as: UInt32.self)
            methods.xUnpin(cache, page, 0)
        }
        return cache
    }

    func key(_ cache: OpaquePointer, _ key: UInt32) -> UInt32? {
        guard let page = methods.xFetch(cache, key, 0) else { return nil }
        defer { methods.xUnpin(cache, page, 0) }
        return page.pointee.pBuf.load(as: UInt32.self)
    }

    func truncates(_ cache: OpaquePointer) -> (passed: UInt, skipped: UInt) {
        var passed: UInt = 0, skipped: UInt = 0
        cinterop_sqlite_bounded_page_cache_truncates(cache, &passed, &skipped)
        return (passed, skipped)
    }

    /// Rekeys the page now at `from` to `to` (pinned meanwhile, as SQLite does).
    func move(_ cache: OpaquePointer, _ from: UInt32, to: UInt32) throws {
        let page = try #require(methods.xFetch(cache, from, 0))
        methods.xRekey(cache, page, from, to)
        methods.xUnpin(cache, page, 0)
    }

    @Test func aPageLeftParkedPastTheLimitIsDropped() throws {
        // Hostile: a page moved above the bound and never moved back (no
        // swap finishes it) must still go at the next truncate.
        let cache = try cache(pages: 10)
        defer { methods.xDestroy(cache) }
        try move(cache, 5, to: Self.lockPage)
        methods.xTruncate(cache, 11)
        #expect(truncates(cache) == (1, 0))
        #expect(key(cache, Self.lockPage) == nil)
        #expect(key(cache, 4) == 4)
        #expect(key(cache, 5) == nil)
    }

    @Test func aSwapThroughTheLockPageLeavesNothingToTruncate() throws {
        let cache = try cache(pages: 10)
        defer { methods.xDestroy(cache) }
        // balance_nonroot's swap of pages 3 and 7.
        try move(cache, 3, to: Self.lockPage)
        try move(cache, 7, to: 3)
        try move(cache, Self.lockPage, to: 7)
        methods.xTruncate(cache, 11)
        methods.xTruncate(cache, 11)
        #expect(truncates(cache) == (0, 2))
        #expect(key(cache, 3) == 7)
        #expect(key(cache, 7) == 3)
        #expect((1...10).allSatisfy { key(cache, $0) != nil })
    }

    @Test func pagesPastTheLimitAreDroppedAndTheBoundFollows() throws {
        let cache = try cache(pages: 10)
        defer { methods.xDestroy(cache) }
        let grown = try #require(methods.xFetch(cache, 40, 2))  // a transaction grew the file…
        methods.xUnpin(cache, grown, 0)
        methods.xTruncate(cache, 11)  // …and rolled back
        #expect(key(cache, 40) == nil)
        #expect(key(cache, 10) == 10)
        methods.xTruncate(cache, 6)  // a smaller file: 6…10 go
        #expect(key(cache, 6) == nil)
        #expect(key(cache, 5) == 5)
        methods.xTruncate(cache, 6)  // nothing left past 5
        #expect(truncates(cache) == (2, 1))
    }

    @Test func moreParkedPagesThanTrackedFallBackToTheWholeWalk() throws {
        let cache = try cache(pages: 20)
        defer { methods.xDestroy(cache) }
        for i: UInt32 in 1...12 { try move(cache, i, to: Self.lockPage + i) }
        methods.xTruncate(cache, 21)
        #expect(truncates(cache) == (1, 0))
        #expect((1...12).allSatisfy { key(cache, Self.lockPage + $0) == nil })
        #expect((13...20).allSatisfy { key(cache, $0) == $0 })
        methods.xTruncate(cache, 21)
        #expect(truncates(cache) == (1, 1))
    }

    @Test func randomInsertsAndRollbacksKeepTheDatabaseWhole() throws {
        // Through SQLite: random keys split index pages out of order (the
        // swaps), rolled-back growth must leave no stale page behind.
        let path = NSTemporaryDirectory() + "herald-pcache-\(UUID().uuidString).sqlite"
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let db = try Database(path: path, create: true, busyTimeoutMs: 1000)
        try db.execute("PRAGMA journal_mode = WAL")
        try db.execute("CREATE TABLE t(k TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID")
        var generator = SystemRandomNumberGenerator()
        var kept = 0
        for round in 0..<40 {
            try db.execute("BEGIN")
            for _ in 0..<200 {
                try db.run("INSERT INTO t(k, v) VALUES (?1, zeroblob(300))") {
                    try $0.bind(String(generator.next() as UInt64, radix: 16), at: 1)
                }
            }
            if round % 3 == 2 {
                try db.execute("ROLLBACK")
            } else {
                try db.execute("COMMIT")
                kept += 200
            }
        }
        #expect(try db.scalarText("PRAGMA integrity_check") == "ok")
        #expect(try db.scalarInt("SELECT count(*) FROM t") == Int64(kept))
    }
}
