import ArgumentParser

/// `herald settings --markdown` (hidden): prints the settings reference
/// table that docs/CONFIGURATION.md holds between its markers, derived from
/// the settings tables (Tests/interop/test_settings_table.py fails when the
/// docs drift from it).
struct SettingsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "settings",
        abstract: "Print the settings reference (docs/CONFIGURATION.md's generated table).",
        shouldDisplay: false
    )

    @Flag(help: "Print the Markdown table, between its markers.")
    var markdown = false

    /// The other commands' tables, after serve's.
    static let flagOnlyTables = [
        APNsSimCommand.Settings.table, FCMSimCommand.Settings.table, BackupCommand.Settings.table,
        TLSSelfSignedCommand.Settings.table,
    ]

    func run() throws {
        guard markdown else { throw ValidationError("give --markdown") }
        print(SettingsReference.beginMarker)
        print(SettingsReference.markdown(ServeSettings.table))
        for table in Self.flagOnlyTables {
            print("\n`herald \(table.command)` (flags only):\n")
            print(SettingsReference.markdown(table))
        }
        print(SettingsReference.endMarker)
    }
}
