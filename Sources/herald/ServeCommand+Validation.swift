import APNsProvider
import ArgumentParser
import FCMProvider
import HeraldCore
import HeraldService

/// `serve`'s settings resolved once: the flags, the environment, the config
/// file (read once, from `--config` or `HERALD_CONFIG`), every value of every
/// layer checked by its table row (ServeSettings.swift), then the rules
/// between settings.
extension ServeCommand {
    private typealias S = ServeSettings

    func resolveSettings() throws -> SettingValues {
        let table = S.table
        let arguments = try SettingArguments.parse(settingArguments, table: table)
        let path = config ?? environmentValue("HERALD_CONFIG").flatMap { $0.isEmpty ? nil : $0 }
        let file = try path.map { try ConfigFile.read(path: $0, table: table) }
        let settings = try SettingValues(table: table, arguments: arguments, environment: environmentValue, file: file)

        if let retentionSeconds, retentionSeconds < 1 { throw ValidationError("--retention-seconds: must be at least 1, got \(retentionSeconds)") }
        let (cert, key) = (settings[S.tlsCert], settings[S.tlsKey])
        if cert.isEmpty != key.isEmpty {
            throw ValidationError(cert.isEmpty ? "\(settings.origin(S.tlsKey)) needs --tls-cert" : "\(settings.origin(S.tlsCert)) needs --tls-key")
        }
        if !settings[S.tlsClientCA].isEmpty && cert.isEmpty {
            throw ValidationError("\(settings.origin(S.tlsClientCA)) needs --tls-cert and --tls-key")
        }
        if settings[S.adminTLS] && cert.isEmpty {
            throw ValidationError("--admin-tls needs --tls-cert and --tls-key (the admin listener uses the same certificate)")
        }
        return settings
    }

    /// The APNs routes given as `--apns-route` flags, or else as config-file
    /// lines, parsed (each error names its flag or line).
    func fixedRouteSpecs(_ settings: SettingValues) throws -> [APNsRouteSpec] {
        try settings.entries(S.apnsRoutes).map { try APNsRouteSpec.parse($0.value, source: $0.origin) }
    }

    /// The FCM routes given as `--fcm-route` flags, or else as config-file
    /// lines, parsed (each error names its flag or line).
    func fixedFCMRouteSpecs(_ settings: SettingValues) throws -> [FCMRouteSpec] {
        try settings.entries(S.fcmRoutes).map { try FCMRouteSpec.parse($0.value, source: $0.origin) }
    }
}
