import APNsSimulation

extension APNsSimCommand {
    /// `herald apns-sim`'s settings, each declared once (Setting.swift); flags
    /// only. Defaults come from the simulator's own configuration.
    enum Settings {
        private static let base = APNsSimulatorConfiguration()
        private static let faults = APNsSimulatorFaults()

        static let table = SettingsTable(command: "apns-sim", layered: false, settings: [
            host, port, cert, key, caOut, keyID, teamID, publicKey, topics, allowMissingToken, maxStreams,
            unregistered, badTokens, tooManyRequests, errorRate, errorStatus, goAwayAfter, delayMilliseconds, hang,
            quiet, record, benchConnect, benchCA, benchKey, benchCount, benchConnections, benchConcurrency,
        ])

        static let host = Setting.text("host", placeholder: "address", default: base.host, "Address to listen on.")
        static let port = Setting.integer(
            "port", default: base.port, "Port (0 picks a free one).", check: SettingRules.range(0...65535))
        static let cert = Setting.text("cert", placeholder: "FILE", "Server certificate PEM file (with --key; default: a fresh self-signed one).")
        static let key = Setting.text("key", placeholder: "FILE", "Server private key PEM file.")
        static let caOut = Setting.text("ca-out", placeholder: "FILE", "Write the certificate clients must trust to this file.")
        static let keyID = Setting.text("key-id", placeholder: "KID", "Expected JWT kid.")
        static let teamID = Setting.text("team-id", placeholder: "TEAM", "Expected JWT iss.")
        static let publicKey = Setting.text(
            "public-key", placeholder: "FILE", "ES256 public key PEM file verifying JWT signatures (without it, signatures are not checked).")
        static let topics = Setting.text(
            "topics", placeholder: "a,b", defaultText: "any", "Allowed apns-topic values, comma-separated.")
        static let allowMissingToken = Setting.switch("allow-missing-token", "Accept requests without a provider token.")
        static let maxStreams = Setting.integer(
            "max-streams", default: base.maxConcurrentStreams, "SETTINGS_MAX_CONCURRENT_STREAMS.")
        static let unregistered = Setting.list(
            "unregistered", placeholder: "TOKEN[:ms]", "Answer 410 Unregistered for TOKEN (as of the timestamp, else start)."
        ) { _, _ in }
        static let badTokens = Setting.list(
            "bad-token", placeholder: "TOKEN", "Answer 400 BadDeviceToken for this token.") { _, _ in }
        static let tooManyRequests = Setting.list(
            "too-many-requests", placeholder: "TOKEN", "Answer 429 TooManyRequests for this token.") { _, _ in }
        static let errorRate = Setting.number(
            "error-rate", default: faults.serverErrorRate, "Fraction of requests answered with --error-status."
        ) { (0...1).contains($0) ? nil : "must be within 0...1, got \($0)" }
        static let errorStatus = Setting.integer(
            "error-status", default: faults.serverErrorStatus, "The status of those answers: 500 or 503."
        ) { [500, 503].contains($0) ? nil : "must be 500 or 503, got \($0)" }
        static let goAwayAfter = Setting.optionalInteger(
            "goaway-after", "Send GOAWAY after this many streams per connection.", check: SettingRules.positive)
        static let delayMilliseconds = Setting.integer(
            "delay-ms", default: 0, "Delay every response by this many milliseconds.", check: SettingRules.notNegative)
        static let hang = Setting.list(
            "hang", placeholder: "TOKEN|TOPIC", "Never answer requests for this device token or apns-topic: a hung endpoint."
        ) { _, _ in }
        static let quiet = Setting.switch("quiet", "Do not log accepted notifications (one stderr line each by default).")
        static let record = Setting.text(
            "record", placeholder: "FILE", "Append each accepted notification to this file as a JSON line (as `serve --sim-record`).")

        // The bench client (`--bench-connect`).
        static let benchConnect = BenchClientSettings.connect
        static let benchCA = BenchClientSettings.ca
        static let benchKey = Setting.text("bench-p8", placeholder: "FILE", "Bench client: .p8 key file.")
        static let benchCount = BenchClientSettings.count
        static let benchConnections = BenchClientSettings.connections
        static let benchConcurrency = BenchClientSettings.concurrency
    }
}
