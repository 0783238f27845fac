import HeraldCore
@testable import HeraldPostgres
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// On every store: once closed, writes and reads throw `StoreError.closed`
/// (a caller sees UNAVAILABLE, never a half-done write).
@Suite("Store contract: a closed store refuses work", .timeLimit(.minutes(1)))
struct ClosedStoreContractTests {
    @Test(arguments: StoreKind.all) func aClosedStoreRefusesWork(_ kind: StoreKind) async throws {
        switch kind {
        case .sqlite:
            try await withTemporaryDirectory { dir in try await Self.refusesOnceClosed(try SQLiteStore(path: dir + "/closed.sqlite")) }
        case .postgres:
            try await PostgresTestDatabase.withSchema { configuration in
                try await Self.refusesOnceClosed(try await PostgresStore.open(configuration))
            }
        case .memory:
            try await Self.refusesOnceClosed(InMemoryStore())
        }
    }

    static func refusesOnceClosed(_ store: any ContractStore) async throws {
        _ = try await store.schedule(makeMessage(key: "before"))
        await store.close()
        await #expect(throws: StoreError.closed) { try await store.schedule(makeMessage()) }
        await #expect(throws: StoreError.closed) { try await store.message(id: "x") }
        await #expect(throws: StoreError.closed) { try await store.claim(ids: ["x"], now: now) }
    }
}
