import ArgumentParser
import HeraldService
import HeraldStorage

/// `herald backup --data-dir D FILE`: an online copy of the store.
struct BackupCommand: ParsableCommand {
    /// Its settings (Setting.swift), flags only.
    enum Settings {
        static let dataDirectory = Setting.text(
            "data-dir", placeholder: "DIR", "The data directory of the store to copy (herald.sqlite inside).",
            check: SettingRules.notEmpty
        ).isRequired()
        static let table = SettingsTable(command: "backup", layered: false, settings: [dataDirectory], positionals: ["file"])
    }

    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the store of a data directory into a new file, while the server runs.",
        usage: "herald backup --data-dir <DIR> <file>",
        discussion: """
            Uses SQLite's online backup API: one consistent snapshot, taken without stopping \
            or blocking the server (WAL mode lets it write meanwhile). Never overwrites FILE (the \
            new file to write; it must not exist). Prints what it copied. Restore: stop the server, copy FILE to \
            <data-dir>/herald.sqlite, remove <data-dir>/herald.sqlite-wal and -shm, start.

            """ + SettingsReference.help(Settings.table)
    )

    /// `--data-dir DIR` and FILE, read by the table.
    @Argument(parsing: .allUnrecognized, help: .hidden)
    var arguments: [String] = []

    func run() throws {
        let settings = try SettingValues(flags: arguments, table: Settings.table)
        let summary = try StoreBackup.copy(
            databaseAt: HeraldConfiguration.databasePath(in: settings[Settings.dataDirectory]), to: settings.positionals[0])
        print(summary)
    }
}
