import HeraldCore
import Testing
@testable import HeraldStorage

/// What each store kind is excused from, pinned: the contract suite runs a
/// case on the kinds that can do it (`StoreKind.durable`, `restartable`,
/// `shared`), so a kind's flag must say what its store really is, and the
/// in-memory store's gaps are listed here rather than skipped silently.
@Suite("Store contract: the kinds and what each cannot do")
struct ContractKindsTests {
    @Test func theInMemoryStoreIsExcusedFromRestartsAndTheReadSideOnly() {
        #expect(!StoreKind.memory.survivesRestart)  // a stopped process loses it all
        #expect(!StoreKind.memory.hasReadSide)  // no GetMessage, ListMessages, CampaignReport
        #expect(StoreKind.memory.sharesDue)
        #expect(StoreKind.sqlite.survivesRestart && StoreKind.sqlite.hasReadSide && !StoreKind.sqlite.sharesDue)
        #expect(StoreKind.postgres.survivesRestart && StoreKind.postgres.hasReadSide && StoreKind.postgres.sharesDue)
        #expect(StoreKind.all.contains(.memory) && StoreKind.all.contains(.sqlite))
        #expect(StoreKind.all.contains(.postgres) == PostgresTestDatabase.isEnabled)
    }

    @Test(arguments: StoreKind.all) func eachKindsFlagsSayWhatItsStoreIs(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            #expect((store is any ServableStore) == kind.hasReadSide)
            #expect((store is any SharedDueStore) == kind.sharesDue)
        }
    }
}
