import HeraldStorage
import HeraldTestSupport
import Logging
import Testing

@testable import HeraldService

@Suite("Herald as services: start, serve, graceful shutdown", .timeLimit(.minutes(1)))
struct HeraldServicesTests {
    static func configuration(_ directory: String) -> HeraldConfiguration {
        var configuration = HeraldConfiguration()
        configuration.port = 0
        configuration.dataDirectory = directory
        configuration.drainTimeout = .seconds(5)
        return configuration
    }

    @Test("withRunning serves on the bound port, then drains and closes the store (it reopens)")
    func startAndShutdown() async throws {
        try await withTemporaryDirectory(prefix: "herald-lifecycle") { directory in
            let server = HeraldServer(configuration: Self.configuration(directory), logger: Logger(label: "test"))
            try await server.withRunning { address async throws in
                #expect(address.port > 0)
                #expect(server.state.current == .serving)
                #expect(try await server.listeningAddress().port == address.port)
            }
            #expect(server.state.current == .draining)
            // Closed: another store opens the same file and reads it.
            let reopened = try SQLiteStore(path: "\(directory)/herald.sqlite")
            _ = try await reopened.countsByState()
            await reopened.close()
        }
    }

    @Test("a refused configuration fails run() and the address waiters alike")
    func refusedConfiguration() async throws {
        try await withTemporaryDirectory(prefix: "herald-lifecycle") { directory in
            var configuration = Self.configuration(directory)
            configuration.host = "10.9.9.9"  // open policy, not loopback
            let server = HeraldServer(configuration: configuration, logger: Logger(label: "test"))
            await #expect(throws: ConfigurationError.self) { try await server.run() }
            await #expect(throws: ConfigurationError.self) { try await server.listeningAddress() }
        }
    }
}
