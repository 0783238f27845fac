import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// `HotSQL`: the per-push statements found by slot, not by hashing their text.
@Suite struct HotSQLTests {
    static let count = HotSQL("SELECT count(*) FROM t WHERE x = ?1")
    static let insert = HotSQL("INSERT INTO t(x) VALUES (?1)")

    @Test func eachStatementHasItsOwnSlotAndIsPreparedOncePerConnection() async throws {
        #expect(Self.count.slot != Self.insert.slot)
        try await withTemporaryDirectory { dir in
            let a = try Database(path: dir + "/a.sqlite", create: true, busyTimeoutMs: 1000)
            let b = try Database(path: dir + "/b.sqlite", create: true, busyTimeoutMs: 1000)
            for db in [a, b] { try db.execute("CREATE TABLE t(x INTEGER)") }
            // The same prepared statement each time on one connection, reset
            // and unbound; another connection prepares its own.
            let first = try a.cached(Self.count)
            #expect(try a.cached(Self.count) === first)
            #expect(try b.cached(Self.count) !== first)
            #expect(try a.cached(Self.insert) !== first)
            for x in [1, 1, 2] { try a.run(Self.insert) { try $0.bind(x, at: 1) } }
            try b.run(Self.insert) { try $0.bind(1, at: 1) }
            func count(_ db: Database, _ x: Int) throws -> Int64 {
                let statement = try db.cached(Self.count)
                try statement.bind(x, at: 1)
                _ = try statement.step()
                return statement.int64(0)
            }
            #expect(try count(a, 1) == 2 && count(a, 2) == 1 && count(b, 1) == 1 && count(b, 2) == 0)
            // A slot past every slot this connection has seen so far.
            let late = HotSQL("SELECT max(x) FROM t")
            #expect(late.slot > Self.insert.slot)
            let statement = try a.cached(late)
            _ = try statement.step()
            #expect(statement.int64(0) == 2)
        }
    }
}
