public import HeraldCore
public import HeraldStorage
import HeraldPrimitives
import PostgresNIO

extension PostgresStore {
    public func registerDevice(_ device: Device) async throws -> Bool {
        try await transaction { connection in
            // `xmax = 0`: the row version was inserted, not updated.
            try await Self.first(connection, """
                INSERT INTO devices(bundle_id, device_token, platform, user_id, locale, timezone, environment,
                                    registered_at, updated_at)
                VALUES (\(device.bundleID), \(device.deviceToken), \(device.platform.rawValue), \(device.userID),
                        \(device.locale), \(device.timezone), \(device.environment?.rawValue),
                        \(device.registeredAt), \(device.updatedAt))
                ON CONFLICT (bundle_id, device_token) DO UPDATE SET
                    platform = excluded.platform, user_id = excluded.user_id, locale = excluded.locale,
                    timezone = excluded.timezone, environment = excluded.environment,
                    updated_at = excluded.updated_at
                RETURNING (xmax = 0)
                """, logger: self.logger) { try $0.decode(Bool.self) } ?? false
        }
    }

    public func unregisterDevice(bundleID: String, deviceToken: String) async throws -> Bool {
        try await transaction { connection in
            try await Self.run(connection, """
                DELETE FROM devices WHERE bundle_id = \(bundleID) AND device_token = \(deviceToken) RETURNING 1
                """, logger: self.logger) > 0
        }
    }

    public func removeDevice(bundleID: String, deviceToken: String, ifRegisteredBefore timestamp: Int64) async throws -> Bool {
        try await transaction { connection in
            guard let (userID, platform) = try await Self.first(connection, """
                DELETE FROM devices WHERE bundle_id = \(bundleID) AND device_token = \(deviceToken) AND updated_at < \(timestamp)
                RETURNING user_id, platform
                """, logger: self.logger, { try $0.decode((String, String).self) }) else { return false }
            // The event log's `device_removed`: at APNs' timestamp, or now
            // for a refusal that removes the token whenever it registered.
            try await Self.appendDeviceRemoved(
                connection, bundleID: bundleID, deviceToken: deviceToken, userID: userID, platform: platform,
                at: min(timestamp, Timestamp.nowMilliseconds()), logger: self.logger)
            return true
        }
    }

    /// One user's devices on one platform. Concurrent reads share one
    /// query (`PostgresBatcher`: Schedule reads them for its warnings, the
    /// dispatcher for its targets, both once per message).
    public func devices(bundleID: String, platform: Platform, userID: String) async throws -> [Device] {
        try await deviceReads.run(DeviceOwner(bundleID: bundleID, platform: platform.rawValue, userID: userID),
                                  writer: DeviceReads(store: self))
    }

    /// The users' devices in one query (`devices(of owners:)`).
    public func devices(of users: [DeviceUser]) async throws -> [[Device]] {
        guard !users.isEmpty else { return [] }
        return try await devices(of: users.map {
            DeviceOwner(bundleID: $0.bundleID, platform: $0.platform.rawValue, userID: $0.userID)
        })
    }

    /// The devices of many owners in one query, in the order asked.
    func devices(of owners: [DeviceOwner]) async throws -> [[Device]] {
        try await connection { connection in
            var found = [[Device]](repeating: [], count: owners.count)
            for try await row in try await connection.query("""
                SELECT q.n, d.bundle_id, d.device_token, d.platform, d.user_id, d.locale, d.timezone, d.environment,
                       d.registered_at, d.updated_at
                FROM unnest(\(owners.map(\.bundleID))::text[], \(owners.map(\.platform))::text[],
                            \(owners.map(\.userID))::text[]) WITH ORDINALITY AS q(b, p, u, n)
                JOIN devices d ON d.bundle_id = q.b AND d.platform = q.p AND d.user_id = q.u
                ORDER BY q.n, d.device_token
                """, logger: self.logger) {
                let (n, bundle, token, platformText, user, locale, timezone, environmentText, registered, updated) =
                    try row.decode((Int64, String, String, String, String, String, String, String?, Int64, Int64).self)
                guard let platform = Platform(rawValue: platformText) else {
                    throw StoreError.invalidRecord("device \(token): unknown platform \(platformText)")
                }
                var environment: APNsEnvironment?
                if let environmentText {
                    guard let value = APNsEnvironment(rawValue: environmentText) else {
                        throw StoreError.invalidRecord("device \(token): unknown environment \(environmentText)")
                    }
                    environment = value
                }
                guard n >= 1, n <= owners.count else { throw StoreError.invalidRecord("device \(token): row for owner \(n)") }
                found[Int(n) - 1].append(Device(
                    bundleID: bundle, platform: platform, userID: user, deviceToken: token, locale: locale,
                    timezone: timezone, environment: environment, registeredAt: registered, updatedAt: updated))
            }
            return found
        }
    }
}

/// Whose devices (`PostgresStore.devices(of:)`).
struct DeviceOwner: Sendable {
    let bundleID: String
    let platform: String
    let userID: String
}

/// `PostgresBatcher`'s view of the store for device reads.
struct DeviceReads: BatchWriter {
    let store: PostgresStore

    func runBatch(_ batch: [(item: DeviceOwner, deadline: ContinuousClock.Instant?)]) async throws -> [[Device]?] {
        try await store.devices(of: batch.map(\.item))
    }

    func runOne(_ item: DeviceOwner, deadline: ContinuousClock.Instant?) async throws -> [Device] {
        try await store.devices(of: [item])[0]
    }
}
