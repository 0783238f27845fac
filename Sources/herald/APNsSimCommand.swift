import ArgumentParser

/// `herald apns-sim`: runs the local APNs simulator.
struct APNsSimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-sim",
        abstract: "Run the local APNs simulator (HTTP/2 over TLS)."
    )

    func run() async throws {
        throw ValidationError("apns-sim is not wired yet")
    }
}
