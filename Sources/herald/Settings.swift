import HeraldPrimitives
import HeraldStorage

/// Where a `serve` flag's default comes from when the flag is not given:
/// the environment (`HERALD_` + the flag name in capitals, `-` as `_`), then
/// the config file (`--config FILE` or `HERALD_CONFIG`), then the built-in
/// default.
///
/// The config file has one `key = value` per line, keys named like the
/// flags (`port = 50051`, `apns-route = team=… key=…`); `#` starts a
/// comment; list flags (`apns-route`, `fcm-route`, `sim-unregistered`,
/// `sim-bad-token`, `fcm-sim-…`) may repeat.
///
/// Strict: every value of every layer goes through the parsing and the
/// checks of the flag (`ServeCommand.validate()` runs each check on each
/// candidate); an unknown key or a bad value stops start-up with an error
/// naming where it came from (`--flag`, `HERALD_VAR` or `FILE:LINE`).
enum Settings {
    /// Every key the config file may use (the flags of `serve`).
    static let knownKeys: Set<String> = [
        "host", "port", "data-dir", "durability", "tokens-file", "grace-seconds", "context-aware-share", "sim-record",
        "apns-route", "apns-routes-file", "sim-unregistered", "sim-bad-token", "log-level",
        "max-concurrent-streams", "drain-seconds", "max-connections", "max-buffered-request-mib",
        "max-connection-buffer-mib", "handshake-timeout", "idle-timeout", "keepalive-interval", "keepalive-timeout",
        "request-receive-timeout", "apns-response-timeout", "route-in-flight", "route-queue",
        "admin-host", "admin-port", "admin-timeout", "log-format", "access-log", "retention-days",
        "fcm-route", "fcm-routes-file", "fcm-rate-per-minute", "fcm-sim-unregistered", "fcm-sim-other-sender", "fcm-sim-fault",
        "store", "replica-id", "lease-seconds",
        "admin-max-connections-per-peer",
        "max-concurrent-reads", "max-queued-reads", "read-timeout",
        "tls-cert", "tls-key", "tls-client-ca", "allow-plaintext", "admin-tls",
        "max-connections-per-peer", "unauthenticated-max-message-bytes", "unauthenticated-buffer-kib",
        "unauthenticated-streams-per-connection", "unauthenticated-streams", "unauthenticated-stream-max-age",
    ]

    /// A value as one layer gives it, and where from.
    struct Candidate {
        /// `--key` (a flag), `HERALD_KEY` or `FILE:LINE: key`.
        var origin: String
        var value: String
    }

    static func string(_ key: String) -> String? {
        environment(key)?.value ?? file.values[key]?.last?.value
    }

    /// nil also when the value does not parse: `validate()` then reports it.
    static func int(_ key: String) -> Int? { string(key).flatMap(Int.init) }

    static func double(_ key: String) -> Double? { string(key).flatMap(Double.init) }

    /// A boolean setting: true/yes/1 or false/no/0; nil when absent or
    /// unparsable (`validate()` reports the latter).
    static func bool(_ key: String) -> Bool? { string(key).flatMap(parseBool) }

    static func parseBool(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "1", "on": true
        case "false", "no", "0", "off": false
        default: nil
        }
    }

    /// A repeatable flag's values from the config file.
    static func list(_ key: String) -> [String] { (file.values[key] ?? []).map(\.value) }

    /// Every value the environment and the config file give `key`, the ones
    /// a higher layer overrides included.
    static func candidates(_ key: String) -> [Candidate] {
        (environment(key).map { [$0] } ?? []) + (file.values[key] ?? [])
    }

    /// The config file's lines for a repeatable key, each with its origin.
    static func fileList(_ key: String) -> [Candidate] { file.values[key] ?? [] }

    /// Where the value in use comes from: the flag when it is given, else
    /// the environment, else the config file's last line for it.
    static func origin(_ key: String) -> String {
        let arguments = CommandLine.arguments
        if arguments.contains(where: { $0 == "--\(key)" || $0.hasPrefix("--\(key)=") }) { return "--\(key)" }
        return (environment(key) ?? file.values[key]?.last)?.origin ?? "--\(key)"
    }

    /// The config file's problem (unreadable, malformed, unknown key), if any.
    static var problem: String? { file.problem }

    private static func environment(_ key: String) -> Candidate? {
        let name = "HERALD_" + String(key.uppercased().map { $0 == "-" ? "_" : $0 })
        guard let value = environmentValue(name), !value.isEmpty else { return nil }
        return Candidate(origin: name, value: value)
    }

    private struct File {
        var values: [String: [Candidate]] = [:]
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
        return environment("config")?.value
    }

    private static func load() -> File {
        guard let path else { return File() }
        let text: String
        do { text = try POSIXFile.readText(path) } catch {
            return File(problem: "cannot read config file \(path): \(error)")
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
            file.values[key, default: []].append(Candidate(origin: "\(path):\(number + 1): \(key)", value: parts[1].trimmingSpaces()))
        }
        return file
    }
}
