public import HeraldCore
public import HeraldStorage
import PostgresNIO

extension PostgresStore {
    /// See `HeraldStore.hold`; SQLite's rule, fenced across replicas as
    /// `transition` is: a message another replica has claimed is left
    /// alone (false, nothing recorded). Under the row's lock: the final
    /// outcomes, then the release (`releaseSet`, which sees them), the due
    /// time and `deferred_at`, then the WAITING outcomes when it applied.
    public func hold(id: String, from: MessageState, now: Int64, recording outcomes: [DeviceOutcome]) async throws -> Bool {
        let hold = try DeviceHold(id: id, outcomes: outcomes)
        return try await transaction { connection in
            guard let owner = try await Self.first(connection, """
                SELECT coalesce(owner, '') FROM messages WHERE id = \(id) FOR UPDATE
                """, logger: self.logger, { try $0.decode(String.self) }) else { return false }
            guard owner.isEmpty || owner == self.configuration.replicaID else { return false }
            try await PostgresRows.insert(connection, hold.final, logger: self.logger)
            let held = try await Self.rows(connection, """
                UPDATE messages SET \(unescaped: Self.releaseSet), due_at = \(hold.dueAt),
                    deferred_at = coalesce(deferred_at, \(now)), updated_at = \(now)
                WHERE id = \(id) AND state = \(from.rawValue) AND sending_since IS NOT NULL RETURNING id
                """, logger: self.logger) { try $0.decode(String.self) }
            guard !held.isEmpty else { return false }
            try await PostgresRows.insert(connection, hold.waiting, logger: self.logger)
            return true
        }
    }
}
