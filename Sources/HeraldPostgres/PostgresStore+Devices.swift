public import HeraldCore
public import HeraldStorage
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
                """, logger: logger) { try $0.decode(Bool.self) } ?? false
        }
    }

    public func unregisterDevice(bundleID: String, deviceToken: String) async throws -> Bool {
        try await transaction { connection in
            try await Self.run(connection, """
                DELETE FROM devices WHERE bundle_id = \(bundleID) AND device_token = \(deviceToken) RETURNING 1
                """, logger: logger) > 0
        }
    }

    public func removeDevice(bundleID: String, deviceToken: String, ifRegisteredBefore timestamp: Int64) async throws -> Bool {
        try await transaction { connection in
            try await Self.run(connection, """
                DELETE FROM devices WHERE bundle_id = \(bundleID) AND device_token = \(deviceToken) AND updated_at < \(timestamp)
                RETURNING 1
                """, logger: logger) > 0
        }
    }

    public func devices(bundleID: String, platform: Platform, userID: String) async throws -> [Device] {
        try await connection { connection in
            try await Self.rows(connection, """
                SELECT bundle_id, device_token, platform, user_id, locale, timezone, environment, registered_at, updated_at
                FROM devices WHERE bundle_id = \(bundleID) AND platform = \(platform.rawValue) AND user_id = \(userID)
                ORDER BY device_token
                """, logger: logger) { row in
                let (bundle, token, platformText, user, locale, timezone, environmentText, registered, updated) =
                    try row.decode((String, String, String, String, String, String, String?, Int64, Int64).self)
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
                return Device(
                    bundleID: bundle, platform: platform, userID: user, deviceToken: token, locale: locale,
                    timezone: timezone, environment: environment, registeredAt: registered, updatedAt: updated)
            }
        }
    }
}
