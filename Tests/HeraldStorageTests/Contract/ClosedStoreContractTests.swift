import HeraldCore
@testable import HeraldPostgres
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// On every store: once closed, writes and reads throw `StoreError.closed`
/// (a caller sees UNAVAILABLE, never a half-done write).
@Suite("Store contract: a closed store refuses work", .storeCaseLimit)
struct ClosedStoreContractTests {
    @Test(arguments: StoreKind.all) func aClosedStoreRefusesWork(_ kind: StoreKind) async throws {
        // Closed inside; `withStore`'s own close after it finds it closed.
        try await withStore(kind) { try await Self.refusesOnceClosed($0) }
    }

    static func refusesOnceClosed(_ store: any ContractStore) async throws {
        _ = try await store.schedule(makeMessage(key: "before"))
        await store.close()
        await #expect(throws: StoreError.closed) { try await store.schedule(makeMessage()) }
        await #expect(throws: StoreError.closed) { try await store.message(id: "x") }
        await #expect(throws: StoreError.closed) { try await store.claim(ids: ["x"], now: now) }
    }
}
