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
            let text = message(for: error).split(whereSeparator: \.isNewline).map { $0.trimmingSpaces() }.joined(separator: " ")
            writeUnbuffered("herald: error: \(text.isEmpty ? "\(error)" : text)\n", to: 2)
            exit(withError: ExitCode(code.rawValue == 0 ? 1 : code.rawValue))
        }
    }
}
