import HeraldStorage
import HeraldTestSupport
import Logging
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import HeraldService

@Suite("HeraldServer: one per data directory", .timeLimit(.minutes(3)))
struct DataDirectoryLockServerTests {
    static func configuration(_ directory: String) -> HeraldConfiguration {
        var configuration = HeraldConfiguration()
        configuration.port = 0
        configuration.dataDirectory = directory
        configuration.drainTimeout = .seconds(5)
        return configuration
    }

    @Test("a second server on a served directory fails before binding; after the first stopped, one starts")
    func secondServerRefused() async throws {
        try await withTemporaryDirectory(prefix: "herald-lock") { directory in
            let first = HeraldServer(configuration: Self.configuration(directory), logger: Logger(label: "test"))
            try await first.withRunning { _ async throws in
                let second = HeraldServer(configuration: Self.configuration(directory), logger: Logger(label: "test"))
                await #expect(throws: DataDirectoryLockError.held(directory: directory, pid: getpid())) {
                    try await second.run()
                }
                await #expect(throws: DataDirectoryLockError.self) { try await second.listeningAddress() }
            }
            // Released with the store at the end of the graceful shutdown.
            let third = HeraldServer(configuration: Self.configuration(directory), logger: Logger(label: "test"))
            try await third.withRunning { address async throws in #expect(address.port > 0) }
        }
    }
}
