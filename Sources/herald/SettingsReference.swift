/// The texts derived from a settings table: the settings part of
/// `--help`, and the Markdown table between the markers in
/// docs/CONFIGURATION.md (`herald settings --markdown` prints it;
/// Tests/interop/test_settings_table.py fails when the docs drift).
enum SettingsReference {
    /// The line before the generated table in docs/CONFIGURATION.md.
    static let beginMarker = "<!-- BEGIN GENERATED: herald settings --markdown -->"
    /// The line after it.
    static let endMarker = "<!-- END GENERATED: herald settings --markdown -->"

    /// `5` for 5.0, `0.5` for 0.5.
    static func format(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : String(number)
    }

    /// The settings as `--help` lists them (a command's discussion).
    static func help(_ table: SettingsTable) -> String {
        var lines: [String] = []
        if table.layered {
            lines.append("""
                Each setting is a flag, an environment variable HERALD_<NAME> (capitals, _ for -) and a \
                config-file key (--config FILE or HERALD_CONFIG: `name = value` lines; list settings repeat \
                there and have no variable). Precedence: flag, environment, config file, default. Every value \
                of every layer is checked; an unknown flag or key is refused and an unknown HERALD_* variable \
                warned about, each with the nearest setting's name.
                """)
            lines.append("")
        }
        lines.append("SETTINGS:")
        for setting in table.settings {
            let flag = "--\(setting.name)" + (setting.shape == .switch ? "" : " <\(setting.placeholder)>")
                + (setting.shape == .list ? " ..." : "")
            var notes: [String] = []
            if setting.required { notes.append("required") }
            if !setting.defaultText.isEmpty { notes.append("default: \(setting.defaultText)") }
            if let variable = setting.environmentName(in: table) { notes.append("env \(variable)") }
            if setting.reloadable { notes.append("SIGHUP re-reads it") }
            let suffix = notes.isEmpty ? "" : " (\(notes.joined(separator: "; ")))"
            lines.append("\(flag): \(setting.doc)\(suffix)")
        }
        return lines.joined(separator: "\n")
    }

    /// The Markdown reference table of `table`, one row a setting (a
    /// flag-only table has no environment and SIGHUP columns).
    static func markdown(_ table: SettingsTable) -> String {
        var lines = table.layered
            ? ["| flag / config key | environment | value | default | SIGHUP | what it sets |", "|---|---|---|---|---|---|"]
            : ["| flag | value | default | what it sets |", "|---|---|---|---|"]
        for setting in table.settings {
            let value = switch setting.shape {
            case .single: setting.placeholder
            case .switch: table.layered ? "switch (true/false)" : "switch"
            case .list: "\(setting.placeholder), repeatable"
            }
            let defaultText = setting.required ? "required" : setting.defaultText.isEmpty ? "—" : "`\(setting.defaultText)`"
            let cells = table.layered
                ? [
                    "`--\(setting.name)`", setting.environmentName(in: table).map { "`\($0)`" } ?? "—", cell(value),
                    defaultText, setting.reloadable ? "re-read" : "", cell(setting.doc),
                ]
                : ["`--\(setting.name)`", cell(value), defaultText, cell(setting.doc)]
            lines.append("| " + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }

    /// Text safe inside a Markdown table cell.
    private static func cell(_ text: String) -> String {
        text.replacingPipes()
    }
}

extension String {
    /// `|` escaped for a Markdown table cell.
    fileprivate func replacingPipes() -> String {
        var result = ""
        for character in self {
            if character == "|" { result += "\\|" } else { result.append(character) }
        }
        return result
    }
}
