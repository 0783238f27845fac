import ArgumentParser

/// `herald serve`: runs the gRPC service.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the Herald gRPC API."
    )

    func run() async throws {
        throw ValidationError("serve is not wired yet")
    }
}
