public import HeraldCore
import HeraldPrimitives

extension SQLiteStore {
    public func registerDevice(_ device: Device) async throws -> Bool {
        try await write { db in
            let exists = try db.cached("SELECT 1 FROM devices WHERE bundle_id = ?1 AND device_token = ?2")
            try exists.bind(device.bundleID, at: 1)
            try exists.bind(device.deviceToken, at: 2)
            let created = try !exists.step()
            exists.reset()
            try db.run("""
                INSERT INTO devices(bundle_id, device_token, platform, user_id, locale, timezone, environment,
                                    registered_at, updated_at)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                ON CONFLICT(bundle_id, device_token) DO UPDATE SET
                    platform = excluded.platform, user_id = excluded.user_id, locale = excluded.locale,
                    timezone = excluded.timezone, environment = excluded.environment,
                    updated_at = excluded.updated_at
                """) { s in
                try s.bind(device.bundleID, at: 1)
                try s.bind(device.deviceToken, at: 2)
                try s.bind(device.platform.rawValue, at: 3)
                try s.bind(device.userID, at: 4)
                try s.bind(device.locale, at: 5)
                try s.bind(device.timezone, at: 6)
                try s.bind(device.environment?.rawValue, at: 7)
                try s.bind(device.registeredAt, at: 8)
                try s.bind(device.updatedAt, at: 9)
            }
            return created
        }
    }

    public func unregisterDevice(bundleID: String, deviceToken: String) async throws -> Bool {
        try await write { db in
            try db.run("DELETE FROM devices WHERE bundle_id = ?1 AND device_token = ?2") {
                try $0.bind(bundleID, at: 1)
                try $0.bind(deviceToken, at: 2)
            }
            return db.changes > 0
        }
    }

    public func removeDevice(bundleID: String, deviceToken: String, ifRegisteredBefore timestamp: Int64) async throws -> Bool {
        try await write { db in
            let statement = try db.cached("""
                DELETE FROM devices WHERE bundle_id = ?1 AND device_token = ?2 AND updated_at < ?3
                RETURNING user_id, platform
                """)
            try statement.bind(bundleID, at: 1)
            try statement.bind(deviceToken, at: 2)
            try statement.bind(timestamp, at: 3)
            defer { statement.reset() }
            guard try statement.step() else { return false }
            let userID = statement.string(0), platform = statement.string(1)
            try statement.run()
            // The event log's `device_removed`: at APNs' timestamp, or now
            // for a refusal that removes the token whenever it registered.
            try Self.appendDeviceRemoved(
                db, bundleID: bundleID, deviceToken: deviceToken, userID: userID, platform: platform,
                at: min(timestamp, Timestamp.nowMilliseconds()))
            return true
        }
    }

    public func devices(bundleID: String, platform: Platform, userID: String) async throws -> [Device] {
        try readDevices(bundleID: bundleID, platform: platform, userID: userID)
    }

    public func devices(of message: StoredMessage, _ body: @escaping @Sendable (@escaping @Sendable () -> [Device]) -> Void) {
        body { [self] in
            (try? readDevices(bundleID: message.bundleID, platform: message.platform, userID: message.userID)) ?? []
        }
    }

    private func readDevices(bundleID: String, platform: Platform, userID: String) throws -> [Device] {
        try read { db in try Self.devices(db, of: DeviceUser(bundleID: bundleID, platform: platform, userID: userID)) }
    }

    public func devices(of users: [DeviceUser]) async throws -> [[Device]] {
        try read { db in try users.map { try Self.devices(db, of: $0) } }
    }

    private static func devices(_ db: Database, of user: DeviceUser) throws -> [Device] {
        let s = try db.cached("""
            SELECT bundle_id, device_token, platform, user_id, locale, timezone, environment,
                   registered_at, updated_at
            FROM devices WHERE bundle_id = ?1 AND platform = ?2 AND user_id = ?3
            ORDER BY device_token
            """)
        try s.bind(user.bundleID, at: 1)
        try s.bind(user.platform.rawValue, at: 2)
        try s.bind(user.userID, at: 3)
        var devices: [Device] = []
        while try s.step() {
            guard let platform = Platform(rawValue: s.string(2)) else {
                throw StoreError.invalidRecord("device \(s.string(1)): unknown platform \(s.string(2))")
            }
            var environment: APNsEnvironment?
            if let raw = s.optionalString(6) {
                guard let value = APNsEnvironment(rawValue: raw) else {
                    throw StoreError.invalidRecord("device \(s.string(1)): unknown environment \(raw)")
                }
                environment = value
            }
            devices.append(Device(
                bundleID: s.string(0), platform: platform, userID: s.string(3), deviceToken: s.string(1),
                locale: s.string(4), timezone: s.string(5), environment: environment,
                registeredAt: s.int64(7), updatedAt: s.int64(8)))
        }
        return devices
    }
}
