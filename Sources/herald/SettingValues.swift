import ArgumentParser

/// Every setting of a table resolved: each value of each layer read
/// (parsed and checked, overridden ones included: a typo anywhere stops
/// start-up naming where it came from, `--port`, `HERALD_PORT` or
/// `herald.conf:3: port`, never a silent default), and the value in use
/// picked by precedence: flag, environment, config file, default.
struct SettingValues: Sendable {
    private var values: [String: any Sendable] = [:]
    private var origins: [String: [String]] = [:]
    /// The positional arguments (the table's `positionals`, in order).
    private(set) var positionals: [String] = []

    /// A flag-only command's settings, from the arguments ArgumentParser
    /// did not recognize.
    init(flags arguments: [String], table: SettingsTable) throws {
        try self.init(
            table: table, arguments: try SettingArguments.parse(arguments, table: table),
            environment: { _ in nil }, file: nil)
    }

    /// - Parameters:
    ///   - environment: a variable's value (empty counts as not set).
    ///   - file: the config file, when one is given (layered tables only).
    init(
        table: SettingsTable, arguments: SettingArguments,
        environment: (String) -> String?, file: ConfigFile?
    ) throws {
        positionals = arguments.positionals
        for setting in table.settings {
            let name = setting.name
            var fromEnvironment: (value: any Sendable, origin: String)?
            if let variable = setting.environmentName(in: table), let raw = environment(variable), !raw.isEmpty {
                fromEnvironment = (try setting.readAny(raw, origin: variable), variable)
            }
            let lines = table.layered ? file?.lines(for: name) ?? [] : []
            let fromFile = try lines.map { (value: try setting.readAny($0.value, origin: $0.origin), origin: $0.origin) }
            let flags = arguments.given[name] ?? []
            let fromFlags = try flags.enumerated().map { index, raw in
                let origin = setting.shape == .list ? "--\(name) #\(index + 1)" : "--\(name)"
                return (value: try setting.readAny(raw, origin: origin), origin: origin)
            }
            let inUse: [(value: any Sendable, origin: String)]
            if !fromFlags.isEmpty {
                inUse = setting.shape == .list ? fromFlags : [fromFlags[fromFlags.count - 1]]
            } else if setting.shape == .list {
                inUse = fromFile
            } else if let fromEnvironment {
                inUse = [fromEnvironment]
            } else {
                inUse = fromFile.last.map { [$0] } ?? []
            }
            if inUse.isEmpty && setting.required {
                throw ValidationError("Missing expected argument '--\(name) <\(setting.placeholder)>'")
            }
            values[name] = inUse.isEmpty ? setting.defaultAny() : setting.combineAny(inUse.map(\.value))
            origins[name] = inUse.isEmpty ? ["--\(name)"] : inUse.map(\.origin)
        }
    }

    subscript<Value>(_ setting: Setting<Value>) -> Value {
        guard let value = values[setting.name] as? Value else {
            preconditionFailure("setting \(setting.name) is not in this table")
        }
        return value
    }

    /// A text setting's value, nil when it is empty (not given).
    func given(_ setting: Setting<String>) -> String? {
        let value = self[setting]
        return value.isEmpty ? nil : value
    }

    /// Where the value in use came from: `--name` (a flag, or the
    /// default), `HERALD_NAME` or `FILE:LINE: name`.
    func origin<Value>(_ setting: Setting<Value>) -> String {
        origins[setting.name]?.last ?? "--\(setting.name)"
    }

    /// A list's values in use, each with its origin (`--name #n` or `FILE:LINE: name`).
    func entries(_ setting: Setting<[String]>) -> [(value: String, origin: String)] {
        Array(zip(self[setting], origins[setting.name] ?? []))
    }
}
