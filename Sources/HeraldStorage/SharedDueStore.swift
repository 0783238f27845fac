/// A store several Herald replicas share (PostgreSQL): due messages are
/// found and claimed in the database, not in one process's due index, and
/// each claim is leased to its replica.
///
/// The rules (docs/SCALING.md):
/// - `claimDue` claims a batch of due messages for this replica (`owner`),
///   skipping rows another replica is claiming at that moment, with a lease
///   of `leaseMilliseconds`.
/// - While a replica sends, it renews the leases of its claims
///   (`renewLeases`, every third of the lease); a claim that is not renewed
///   expires, and any replica may then take it over (`takeOverExpired`) by
///   the crash rule of `recoverInterrupted`.
/// - `recoverInterrupted` (at start) resolves this replica's own claims and
///   expired ones only, never a live replica's.
public protocol SharedDueStore: HeraldStore {
    /// This replica's name, recorded as the `owner` of its claims.
    var replicaID: String { get }

    /// How long a claim (or its last renewal) holds.
    var leaseMilliseconds: Int64 { get }

    /// Claims up to `limit` messages due at or before `before` for this
    /// replica, each leased until `now + leaseMilliseconds`, fair across
    /// bundles (``DueTurns``): each bundle with a due message takes a turn
    /// in each round, its transactional messages first, then oldest due
    /// first; `quota[bundle]` caps a bundle's claims (0: none; its throttle
    /// has no slot free); within a turn, bundles after `after` go first
    /// (the poller passes the last bundle of its previous claim, so no
    /// bundle waits behind the same others at every poll). Returned in
    /// ``DueTurns`` order.
    func claimDue(before: Int64, limit: Int, now: Int64, quota: [String: Int], after: String?) async throws -> [StoredMessage]

    /// Extends to `now + leaseMilliseconds` the leases of those of `ids`
    /// this replica still holds; returns their ids (a missing one was
    /// finished meanwhile, or taken over after its lease expired).
    func renewLeases(ids: [String], now: Int64) async throws -> Set<String>

    /// The crash rule of `recoverInterrupted`, for claims of any replica
    /// whose lease ended before `now` (their replica died or stalled):
    /// devices handed over without an answer become UNCONFIRMED (never
    /// resent); the messages wait again, due, for the devices without an
    /// outcome.
    func takeOverExpired(now: Int64) async throws -> InterruptedRecovery
}

extension SharedDueStore {
    /// `claimDue` with no bundle capped.
    public func claimDue(before: Int64, limit: Int, now: Int64) async throws -> [StoredMessage] {
        try await claimDue(before: before, limit: limit, now: now, quota: [:], after: nil)
    }

    /// `claimDue` starting its turns at the lowest bundle id.
    public func claimDue(before: Int64, limit: Int, now: Int64, quota: [String: Int]) async throws -> [StoredMessage] {
        try await claimDue(before: before, limit: limit, now: now, quota: quota, after: nil)
    }
}
