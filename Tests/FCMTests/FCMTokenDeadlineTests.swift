import FCM
import HeraldPrimitives
import HeraldTestSupport
import NIOCore
import NIOPosix
import Testing

extension FCMTestSuites {
    @Suite(.timeLimit(.minutes(1))) struct FCMTokenDeadlineTests {
        /// A token endpoint that accepts TCP connections and never answers
        /// (the TLS handshake hangs): the access-token fetch stays in flight
        /// up to its own timeout, far beyond the request's deadline.
        @Test func aSendWaitingForATokenEndsAtItsOwnDeadline() async throws {
            let silent = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .bind(host: "127.0.0.1", port: 0).get()
            let port = try #require(silent.localAddress?.port)
            let clock = ManualFCMClock(start: .now)
            let loopback = try await Loopback.start(clock: clock) { configuration in
                configuration.tokenURL = "https://127.0.0.1:\(port)/token"
                configuration.requestTimeout = .seconds(300)
            }
            let deadline = clock.now().addingTimeInterval(5)
            let sending = Task { try await loopback.client.send(loopback.request(deadline: deadline)) }
            // The token request's own deadline (300 s) and the send's wait (5 s).
            await clock.waitForTimers(2)
            clock.advance(by: .seconds(5))
            await #expect(throws: FCMError.deadlineExceeded) { _ = try await sending.value }
            #expect(loopback.simulator.statusCounts.isEmpty)
            #expect(await loopback.client.status().accessTokensMinted == 0)
            await loopback.stop()
            try await silent.close()
        }
    }
}
