import ArgumentParser

/// One setting of a command, declared once: its name, type (how a raw value
/// is parsed and checked), default, one-line doc and whether SIGHUP re-reads
/// what it names. The flag (`--NAME`), the environment variable
/// (`HERALD_NAME`, capitals, `_` for `-`), the config-file key (`NAME`), the
/// validation, the `--help` text and docs/CONFIGURATION.md's table are all
/// derived from it (SettingsTable, SettingValues, SettingsReference).
struct Setting<Value: Sendable>: Sendable {
    /// The flag's long name, the config-file key and (in capitals) the
    /// environment variable's suffix.
    let name: String
    let shape: SettingShape
    /// What the value is, for `--help` and the docs (`integer`, `FILE`, …).
    let placeholder: String
    /// The default as `--help` and the docs show it ("" for none).
    let defaultText: String
    /// The value when no layer gives one.
    let defaultValue: @Sendable () -> Value
    /// One line for `--help` and the docs.
    let doc: String
    /// SIGHUP re-reads the file this setting names.
    var reloadable = false
    /// No layer giving a value is an error (a flag-only command's required option).
    var required = false
    /// Parses and checks one raw value (a flag's, a variable's or a config
    /// line's); throws a `ValidationError` naming `origin`.
    let read: @Sendable (_ raw: String, _ origin: String) throws -> Value

    /// The environment variable that gives this setting (serve's single
    /// values and switches), or nil.
    func environmentName(in table: SettingsTable) -> String? {
        guard table.layered, shape != .list else { return nil }
        return "HERALD_" + String(name.uppercased().map { $0 == "-" ? "_" : $0 })
    }
}

/// How a setting is given on the command line, and how its layers combine.
enum SettingShape: Sendable, Equatable {
    /// `--name VALUE`; the last flag, else the environment, else the config
    /// file's last line, else the default.
    case single
    /// `--name` (no value) turns it on; the environment and the config file
    /// give `true` or `false`.
    case `switch`
    /// `--name VALUE`, repeatable: every flag when any is given, else every
    /// config-file line; no environment variable.
    case list
}

/// A setting with its value type erased: what the table, the parser and
/// the reference need.
protocol AnySetting: Sendable {
    var name: String { get }
    var shape: SettingShape { get }
    var placeholder: String { get }
    var defaultText: String { get }
    var doc: String { get }
    var reloadable: Bool { get }
    var required: Bool { get }
    func environmentName(in table: SettingsTable) -> String?
    /// Reads one raw value (erased).
    func readAny(_ raw: String, origin: String) throws -> any Sendable
    /// The default (erased).
    func defaultAny() -> any Sendable
    /// Values of one layer combined (lists concatenate; others take the last).
    func combineAny(_ values: [any Sendable]) -> any Sendable
}

extension Setting: AnySetting {
    func readAny(_ raw: String, origin: String) throws -> any Sendable { try read(raw, origin) }
    func defaultAny() -> any Sendable { defaultValue() }
    func combineAny(_ values: [any Sendable]) -> any Sendable {
        if shape == .list { return values.flatMap { $0 as? [String] ?? [] } }
        return values.last ?? defaultValue()
    }
}

// MARK: - Kinds of settings

/// A check on a parsed value: nil when it passes, else the problem.
typealias SettingRule<Value> = @Sendable (Value) -> String?

extension Setting where Value == Int {
    static func integer(
        _ name: String, default value: Int, defaultText: String? = nil, _ doc: String,
        check rule: @escaping SettingRule<Int> = { _ in nil }
    ) -> Setting {
        Setting(
            name: name, shape: .single, placeholder: "integer", defaultText: defaultText ?? String(value),
            defaultValue: { value }, doc: doc,
            read: { raw, origin in
                guard let parsed = Int(raw) else { throw ValidationError("\(origin): must be an integer, got \"\(raw)\"") }
                if let problem = rule(parsed) { throw ValidationError("\(origin): \(problem)") }
                return parsed
            })
    }
}

extension Setting where Value == Int? {
    /// An integer with no default (nil when not given).
    static func optionalInteger(
        _ name: String, _ doc: String, check rule: @escaping SettingRule<Int> = { _ in nil }
    ) -> Setting {
        Setting(
            name: name, shape: .single, placeholder: "integer", defaultText: "", defaultValue: { nil }, doc: doc,
            read: { raw, origin in
                guard let parsed = Int(raw) else { throw ValidationError("\(origin): must be an integer, got \"\(raw)\"") }
                if let problem = rule(parsed) { throw ValidationError("\(origin): \(problem)") }
                return parsed
            })
    }
}

extension Setting {
    /// The same setting, required: a command fails without it.
    func isRequired() -> Setting {
        var copy = self
        copy.required = true
        return copy
    }
}

extension Setting where Value == Double {
    static func number(
        _ name: String, default value: Double, _ doc: String, check rule: @escaping SettingRule<Double> = { _ in nil }
    ) -> Setting {
        Setting(
            name: name, shape: .single, placeholder: "number", defaultText: SettingsReference.format(value),
            defaultValue: { value }, doc: doc,
            read: { raw, origin in
                guard let parsed = Double(raw) else { throw ValidationError("\(origin): must be a number, got \"\(raw)\"") }
                if let problem = rule(parsed) { throw ValidationError("\(origin): \(problem)") }
                return parsed
            })
    }

    /// Seconds, more than 0 and at most `limit` (a day by default).
    static func seconds(_ name: String, default value: Double, limit: Double = 86_400, _ doc: String) -> Setting {
        number(name, default: value, doc) { seconds in
            seconds > 0 && seconds <= limit
                ? nil : "must be more than 0 and at most \(SettingsReference.format(limit)) seconds, got \(seconds)"
        }
    }
}

extension Setting where Value == String {
    static func text(
        _ name: String, placeholder: String = "string", default value: String = "", defaultText: String? = nil,
        _ doc: String, reloadable: Bool = false, check rule: @escaping SettingRule<String> = { _ in nil }
    ) -> Setting {
        text(name, placeholder: placeholder, default: { value }, defaultText: defaultText ?? value, doc,
             reloadable: reloadable, check: rule)
    }

    /// A text whose default is computed when it is needed (e.g. from the
    /// process environment).
    static func text(
        _ name: String, placeholder: String = "string", default value: @escaping @Sendable () -> String,
        defaultText: String, _ doc: String, reloadable: Bool = false,
        check rule: @escaping SettingRule<String> = { _ in nil }
    ) -> Setting {
        Setting(
            name: name, shape: .single, placeholder: placeholder, defaultText: defaultText,
            defaultValue: value, doc: doc, reloadable: reloadable,
            read: { raw, origin in
                if let problem = rule(raw) { throw ValidationError("\(origin): \(problem)") }
                return raw
            })
    }

    /// One of `choices`.
    static func choice(_ name: String, _ choices: [String], default value: String, _ doc: String, problem: String) -> Setting {
        text(name, placeholder: choices.joined(separator: "|"), default: value, doc) { raw in
            choices.contains(raw) ? nil : "\(problem), got \"\(raw)\""
        }
    }
}

extension Setting where Value == Bool {
    /// Off unless `--name` is given, or the environment or config file says
    /// true (true/yes/1/on or false/no/0/off).
    static func `switch`(_ name: String, _ doc: String) -> Setting {
        Setting(
            name: name, shape: .switch, placeholder: "", defaultText: "off", defaultValue: { false }, doc: doc,
            read: { raw, origin in
                guard let value = parseBool(raw) else { throw ValidationError("\(origin): must be true or false, got \"\(raw)\"") }
                return value
            })
    }

    static func parseBool(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "1", "on": true
        case "false", "no", "0", "off": false
        default: nil
        }
    }
}

extension Setting where Value == [String] {
    /// A repeatable value; `check` sees each one with its origin and throws
    /// its own error.
    static func list(
        _ name: String, placeholder: String, _ doc: String,
        check: @escaping @Sendable (_ raw: String, _ origin: String) throws -> Void
    ) -> Setting {
        Setting(
            name: name, shape: .list, placeholder: placeholder, defaultText: "", defaultValue: { [] }, doc: doc,
            read: { raw, origin in
                try check(raw, origin)
                return [raw]
            })
    }
}

// MARK: - Common rules

enum SettingRules {
    static func range(_ range: ClosedRange<Int>, _ note: String = "") -> SettingRule<Int> {
        { range.contains($0) ? nil : "must be \(range.lowerBound)...\(range.upperBound)\(note), got \($0)" }
    }

    static let atLeastOne: SettingRule<Int> = { $0 >= 1 ? nil : "must be at least 1, got \($0)" }

    static let notNegative: SettingRule<Int> = { $0 >= 0 ? nil : "must not be negative, got \($0)" }

    static let notEmpty: SettingRule<String> = { $0.isEmpty ? "must not be empty" : nil }

    static let positive: SettingRule<Int> = { $0 > 0 ? nil : "must be positive, got \($0)" }
}
