import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import GRPCEngine

/// Loop-bound classes check their loop in debug builds: a call from another
/// thread ends the process instead of racing.
@Suite("Loop confinement (debug builds)")
struct LoopConfinementTests {
    @Test func tallyTableOnItsLoopRecords() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let tally = GRPCCallTally(methodCount: 1, durationBounds: [.milliseconds(1)])
        let table = tally.table(for: loop)
        try await loop.submit { table.record(method: 0, code: 0, nanoseconds: 10) }.get()
        #expect(tally.snapshot().count(method: 0, code: 0) == 1)
        await loop.shutdownGracefully()
    }

    /// The control for `connectionCalledOffItsLoopFails`: the same calls on the loop.
    @Test func connectionCalledOnItsLoopRuns() async throws {
        var configuration = GRPCServerConfiguration()
        configuration.eventLoopThreads = 1
        let shared = GRPCServerShared(configuration: configuration, routes: [:], logger: Logger(label: "loop-test"))
        let channel = NIOAsyncTestingChannel()
        try await channel.eventLoop.submit {
            GRPCConnection(shared: shared, channel: channel).beginShutdown()
        }.get()
        try await channel.close()
    }

    #if DEBUG
    @Test func tallyTableWrittenOffItsLoopFails() async {
        await #expect(processExitsWith: .failure) {
            let tally = GRPCCallTally(methodCount: 1, durationBounds: [.milliseconds(1)])
            tally.table(for: NIOAsyncTestingEventLoop()).record(method: 0, code: 0, nanoseconds: 10)
        }
    }

    @Test func connectionCalledOffItsLoopFails() async {
        await #expect(processExitsWith: .failure) {
            var configuration = GRPCServerConfiguration()
            configuration.eventLoopThreads = 1
            let shared = GRPCServerShared(configuration: configuration, routes: [:], logger: Logger(label: "loop-test"))
            let connection = GRPCConnection(shared: shared, channel: NIOAsyncTestingChannel())
            connection.beginShutdown()  // the server hops onto the loop first; this test does not
        }
    }
    #endif
}
