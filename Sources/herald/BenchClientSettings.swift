/// The bench client's settings `apns-sim` and `fcm-sim` share
/// (`--bench-connect` runs a load client instead of a simulator): declared
/// once, listed in both tables.
enum BenchClientSettings {
    static let connect = Setting.text(
        "bench-connect", placeholder: "HOST:PORT", "Bench client: load the simulator at HOST:PORT instead of running one.")
    static let ca = Setting.text("bench-ca", placeholder: "FILE", "Bench client: CA file to trust.")
    static let count = Setting.integer(
        "bench-count", default: 100_000, "Bench client: requests to send.", check: SettingRules.positive)
    static let connections = Setting.integer(
        "bench-connections", default: 1, "Bench client: pool connections.", check: SettingRules.positive)
    static let concurrency = Setting.integer(
        "bench-concurrency", default: 1000, "Bench client: requests in flight.", check: SettingRules.positive)
}
