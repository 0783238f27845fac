import HeraldService

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `herald` executable: the push service and its tools.
@main
enum HeraldCommand {
    static let commands = [ServeCommand.spec(), APNsSimCommand.spec()]

    static func main() async {
        let action: HeraldCommandLine.Action
        do {
            action = try HeraldCommandLine.parse(Array(CommandLine.arguments.dropFirst()), commands: commands)
        } catch {
            printError(HeraldCommandLine.usageText(error.message, command: error.command))
            exit(64)
        }
        switch action {
        case .printVersion:
            print(HeraldVersion.current)
        case .printHelp(let command):
            print(HeraldCommandLine.help(command, commands: commands), terminator: "")
        case .run(let parsed):
            do {
                switch parsed.command.name {
                case "serve":
                    let command = try ServeCommand(parsed)
                    try command.validate()
                    try await command.run()
                default:
                    try await APNsSimCommand(parsed).run()
                }
            } catch let error as ValidationError {
                printError(HeraldCommandLine.usageText(error.message, command: parsed.command))
                exit(64)
            } catch {
                printError("Error: \(String(describing: error))\n")
                exit(1)
            }
        }
    }
}
