import HeraldPrimitives
import HeraldStorage

/// Where a `serve` flag's default comes from when the flag is not given:
/// the environment (`HERALD_` + the flag name in capitals, `-` as `_`), then
/// the config file (`--config FILE` or `HERALD_CONFIG`), then the built-in
/// default.
///
/// The config file has one `key = value` per line, keys named like the
/// flags (`port = 50051`, `apns-route = team=… key=…`); `#` starts a
/// comment; list flags (`apns-route`, `sim-unregistered`, `sim-bad-token`)
/// may repeat.
enum Settings {
    /// Every key the config file may use (the flags of `serve`).
    static let knownKeys: Set<String> = [
        "host", "port", "data-dir", "durability", "tokens-file", "grace-seconds", "context-aware-share", "sim-record",
        "apns-route", "apns-routes-file", "sim-unregistered", "sim-bad-token", "log-level",
        "max-concurrent-streams", "drain-seconds", "max-connections", "max-buffered-request-mib",
        "max-connection-buffer-mib", "handshake-timeout", "idle-timeout", "keepalive-interval", "keepalive-timeout",
        "request-receive-timeout", "apns-response-timeout", "route-in-flight", "route-queue",
        "admin-host", "admin-port", "admin-timeout", "log-format", "access-log", "retention-days",
    ]

    static func string(_ key: String) -> String? {
        environment(key) ?? file.values[key]?.last
    }

    static func int(_ key: String) -> Int? { string(key).flatMap(Int.init) }

    static func double(_ key: String) -> Double? { string(key).flatMap(Double.init) }

    /// A repeatable flag's values from the config file.
    static func list(_ key: String) -> [String] { file.values[key] ?? [] }

    /// The config file's problem (unreadable, malformed, unknown key), if any.
    static var problem: String? { file.problem }

    private static func environment(_ key: String) -> String? {
        let name = "HERALD_" + String(key.uppercased().map { $0 == "-" ? "_" : $0 })
        guard let value = environmentValue(name), !value.isEmpty else { return nil }
        return value
    }

    private struct File {
        var values: [String: [String]] = [:]
        var problem: String?
    }

    private static let file: File = load()

    /// The path given as `--config PATH`, `--config=PATH` or `HERALD_CONFIG`.
    static var path: String? {
        let arguments = CommandLine.arguments
        for (index, argument) in arguments.enumerated() {
            if argument == "--config", index + 1 < arguments.count { return arguments[index + 1] }
            if argument.hasPrefix("--config=") { return String(argument.dropFirst("--config=".count)) }
        }
        return environment("config")
    }

    private static func load() -> File {
        guard let path else { return File() }
        guard let text = try? POSIXFile.readText(path) else {
            return File(problem: "cannot read config file \(path)")
        }
        var file = File()
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = (raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                .trimmingSpaces()
            if line.isEmpty { continue }
            let parts = line.split(separator: "=", maxSplits: 1)
            let key = parts.first.map { $0.trimmingSpaces() } ?? ""
            guard parts.count == 2, knownKeys.contains(key) else {
                file.problem = "\(path):\(number + 1): " + (parts.count == 2 ? "unknown key \"\(key)\"" : "expected key = value")
                return file
            }
            file.values[key, default: []].append(parts[1].trimmingSpaces())
        }
        return file
    }
}
