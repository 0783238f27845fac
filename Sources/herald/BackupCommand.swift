import ArgumentParser
import HeraldService
import HeraldStorage

/// `herald backup --data-dir D FILE`: an online copy of the store.
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the store of a data directory into a new file, while the server runs.",
        discussion: """
            Uses SQLite's online backup API: one consistent snapshot, taken without stopping \
            or blocking the server (WAL mode lets it write meanwhile). Never overwrites FILE. \
            Prints what it copied. Restore: stop the server, copy FILE to \
            <data-dir>/herald.sqlite, remove <data-dir>/herald.sqlite-wal and -shm, start.
            """
    )

    @Option(name: .customLong("data-dir"), help: "The data directory of the store to copy (herald.sqlite inside).")
    var dataDirectory: String

    @Argument(help: "The new file to write; it must not exist.")
    var file: String

    func run() throws {
        let summary = try StoreBackup.copy(databaseAt: HeraldConfiguration.databasePath(in: dataDirectory), to: file)
        print(summary)
    }
}
