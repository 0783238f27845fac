import ArgumentParser
import HeraldPrimitives

/// A command's settings, in the order they are checked and listed, and
/// where they may come from: the flags only, or (`layered`, as `serve`)
/// the flags, then the environment (`HERALD_<NAME>`), then the config file
/// (`--config FILE` or `HERALD_CONFIG`), then the default.
struct SettingsTable: Sendable {
    let command: String
    let layered: Bool
    let settings: [any AnySetting]
    /// Positional arguments the command takes, by name (`file`), all required.
    let positionals: [String]

    init(command: String, layered: Bool, settings: [any AnySetting], positionals: [String] = []) {
        self.command = command
        self.layered = layered
        self.settings = settings
        self.positionals = positionals
        // Declared once: a name given twice is a programming error.
        precondition(Set(settings.map(\.name)).count == settings.count, "\(command): a setting is declared twice")
    }

    func setting(named name: String) -> (any AnySetting)? {
        settings.first { $0.name == name }
    }
}

/// The raw values given as flags, per setting, in order (from the
/// arguments ArgumentParser did not recognize).
struct SettingArguments: Sendable {
    private(set) var given: [String: [String]] = [:]
    /// The positional arguments, one per name of the table's `positionals`.
    private(set) var positionals: [String] = []

    /// `--name VALUE`, `--name=VALUE`, or `--name` alone for a switch;
    /// anything else (an unknown option, a positional argument, a missing
    /// value) is an error worded as ArgumentParser's.
    static func parse(_ arguments: [String], table: SettingsTable) throws -> SettingArguments {
        var result = SettingArguments()
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--"), argument != "--" else {
                guard argument != "--", result.positionals.count < table.positionals.count else {
                    throw ValidationError("Unexpected argument '\(argument)'")
                }
                result.positionals.append(argument)
                continue
            }
            let body = argument.dropFirst(2)
            let parts = body.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            guard let setting = table.setting(named: name) else {
                throw ValidationError("Unknown option '--\(name)'" + table.didYouMean("--" + name) { "'--\($0.name)'" })
            }
            let value: String
            if setting.shape == .switch {
                guard parts.count == 1 else { throw ValidationError("The flag '--\(name)' does not take a value") }
                value = "true"
            } else if parts.count == 2 {
                value = String(parts[1])
            } else {
                guard index < arguments.count, !arguments[index].hasPrefix("--") else {
                    throw ValidationError("Missing value for '--\(name) <\(setting.placeholder)>'")
                }
                value = arguments[index]
                index += 1
            }
            result.given[name, default: []].append(value)
        }
        if result.positionals.count < table.positionals.count {
            throw ValidationError("Missing expected argument '<\(table.positionals[result.positionals.count])>'")
        }
        return result
    }
}

/// A config file of `key = value` lines (`#` starts a comment), read once.
/// Keys are the table's names; only list settings may repeat.
struct ConfigFile: Sendable {
    struct Line: Sendable {
        var key: String
        var value: String
        /// `FILE:LINE: key`.
        var origin: String
    }

    let lines: [Line]

    func lines(for key: String) -> [Line] { lines.filter { $0.key == key } }

    /// - Throws: the file unreadable, a line that is not `key = value`, an
    ///   unknown key, or a single-valued key given twice, naming the line.
    static func read(path: String, table: SettingsTable) throws -> ConfigFile {
        let text: String
        do { text = try POSIXFile.readText(path) } catch {
            throw ValidationError("cannot read config file \(path): \(error)")
        }
        var lines: [Line] = []
        var firstLine: [String: Int] = [:]
        for (offset, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = offset + 1
            let line = (raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                .trimmingSpaces()
            if line.isEmpty { continue }
            let parts = line.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { throw ValidationError("\(path):\(number): expected key = value") }
            let key = parts[0].trimmingSpaces()
            guard let setting = table.setting(named: key) else {
                throw ValidationError("\(path):\(number): unknown key \"\(key)\"" + table.didYouMean(key) { "\"\($0.name)\"" })
            }
            if setting.shape != .list, let first = firstLine[key] {
                throw ValidationError("\(path):\(number): \(key): given twice (first on line \(first)); only list keys repeat")
            }
            firstLine[key] = firstLine[key] ?? number
            lines.append(Line(key: key, value: parts[1].trimmingSpaces(), origin: "\(path):\(number): \(key)"))
        }
        return ConfigFile(lines: lines)
    }
}
