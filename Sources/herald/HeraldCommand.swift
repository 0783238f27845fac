import ArgumentParser
import HeraldService

/// The `herald` executable: the push service and its tools.
@main
struct HeraldCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Herald: a push-notification scheduling service (gRPC over HTTP/2).",
        version: HeraldVersion.current,
        subcommands: [
            ServeCommand.self, APNsSimCommand.self, FCMSimCommand.self, BackupCommand.self, TLSSelfSignedCommand.self,
            SettingsCommand.self,
            ScheduleClientCommand.self, CancelClientCommand.self, RenderClientCommand.self, GetClientCommand.self,
            ListClientCommand.self, ReportClientCommand.self, EventsClientCommand.self, StatusClientCommand.self,
            RegisterClientCommand.self, UnregisterClientCommand.self,
        ],
        defaultSubcommand: ServeCommand.self
    )

    /// As ArgumentParser's, except that a failure is one line on stderr
    /// (`herald: error: …`, no usage text) and a non-zero exit; help and
    /// `--version` print as usual.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            if code == .success { exit(withError: error) }
            // A client subcommand already printed its one line (ClientOptions.run).
            if error is ExitCode { exit(withError: error) }
            var text = message(for: error).split(whereSeparator: \.isNewline).map { $0.trimmingSpaces() }.joined(separator: " ")
            text += subcommandHint(for: text)
            writeUnbuffered("herald: error: \(text.isEmpty ? "\(error)" : text)\n", to: 2)
            exit(withError: ExitCode(code.rawValue == 0 ? 1 : code.rawValue))
        }
    }

    /// "; did you mean `herald serve`?" when the error is the first
    /// argument unexpected (`herald serv`: taken as `serve`'s argument) and
    /// it is a few edits from a subcommand's name; else "".
    static func subcommandHint(for text: String) -> String {
        let arguments = CommandLine.arguments.dropFirst()
        guard let first = arguments.first, !first.hasPrefix("-"), text.contains("Unexpected argument '\(first)'") else { return "" }
        let names = configuration.subcommands.compactMap { $0.configuration.commandName }
        let near = SettingsTable.nearest(first.lowercased(), among: names, limit: max(1, min(3, first.count / 3)))
        return near.map { "; did you mean `herald \($0)`?" } ?? ""
    }
}
