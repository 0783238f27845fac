import FCMSimulation

extension FCMSimCommand {
    /// `herald fcm-sim`'s settings, each declared once (Setting.swift); flags
    /// only. Defaults come from the simulator's own configuration.
    enum Settings {
        private static let base = FCMSimulatorConfiguration(accounts: [])

        static let table = SettingsTable(command: "fcm-sim", layered: false, settings: [
            host, port, account, tokenLifetimeSeconds, quotaPerMinute, record, fault, unregistered, otherSender,
            caOut, quiet, maxStreams,
            benchConnect, benchCA, benchServiceAccount, benchTokenURL, benchCount, benchConnections, benchConcurrency,
        ])

        static let host = Setting.text("host", placeholder: "address", default: base.host, "Address to listen on.")
        static let port = Setting.integer(
            "port", default: base.port, "Port (0 picks a free one).", check: SettingRules.range(0...65535))
        static let account = Setting.list(
            "account", placeholder: "SPEC",
            "A service account: \"project=ID email=E kid=K public-key=FILE\" (at least one)."
        ) { _, _ in }
        static let tokenLifetimeSeconds = Setting.integer(
            "token-lifetime-seconds", default: Int(base.accessTokenLifetime.components.seconds),
            "Lifetime of minted access tokens.", check: SettingRules.positive)
        static let quotaPerMinute = Setting.optionalInteger(
            "quota-per-minute", "Sends allowed per project and minute (a token bucket; default: no quota).",
            check: SettingRules.positive)
        static let record = Setting.text("record", placeholder: "FILE", "Append each accepted message to this file as a JSON line.")
        static let fault = Setting.list(
            "fault", placeholder: "KIND[:COUNT]", "Answer the next COUNT messages:send requests with a fault (see above), in order."
        ) { raw, _ in _ = try FCMSimCommand.parseFault(raw) }
        static let unregistered = Setting.list(
            "unregistered", placeholder: "TOKEN", "Answer 404 UNREGISTERED for this registration token.") { _, _ in }
        static let otherSender = Setting.list(
            "other-sender", placeholder: "TOKEN", "Answer 403 SENDER_ID_MISMATCH for this token.") { _, _ in }
        static let caOut = Setting.text("ca-out", placeholder: "FILE", "Write the certificate clients must trust to this file.")
        static let quiet = Setting.switch("quiet", "Do not log accepted messages (one stderr line each by default).")
        static let maxStreams = Setting.integer(
            "max-streams", default: base.maxConcurrentStreams, "SETTINGS_MAX_CONCURRENT_STREAMS (FCM advertises 100).",
            check: SettingRules.positive)

        // The bench client (`--bench-connect`).
        static let benchConnect = BenchClientSettings.connect
        static let benchCA = BenchClientSettings.ca
        static let benchServiceAccount = Setting.text(
            "bench-service-account", placeholder: "FILE", "Bench client: service-account JSON key file.")
        static let benchTokenURL = Setting.text(
            "bench-token-url", placeholder: "URL", defaultText: "the key's token_uri", "Bench client: OAuth token URL.")
        static let benchCount = BenchClientSettings.count
        static let benchConnections = BenchClientSettings.connections
        static let benchConcurrency = BenchClientSettings.concurrency
    }
}
