import ArgumentParser
import HeraldService

/// The `herald` executable: the push service and its tools.
@main
struct HeraldCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Herald: a push-notification scheduling service (gRPC over HTTP/2).",
        version: HeraldVersion.current,
        subcommands: [ServeCommand.self, APNsSimCommand.self, BackupCommand.self],
        defaultSubcommand: ServeCommand.self
    )
}
