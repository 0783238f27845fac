/// Everything Herald serves from: the write side (`HeraldStore`, with
/// Schedule through a callback: `CallbackScheduling`), the read side,
/// retention, the caps' and throttle's ledger (`PolicyLedger`), and the
/// store's life cycle. The embedded `SQLiteStore` and the
/// PostgreSQL store (`HeraldPostgres`) conform; the service layer holds
/// `any ServableStore` and nothing engine-specific.
public protocol ServableStore: CallbackScheduling, MessageReadSide, FinishedMessagePruning, PolicyLedger {
    /// A write (or the cheapest check that one would succeed) that changes
    /// nothing: throws when the store cannot be written now (Health, `/readyz`).
    func probeWrite() async throws

    /// Finishes the writes under way and closes the connections; later calls
    /// throw `StoreError.closed`.
    func close() async
}

extension SQLiteStore: ServableStore {}
