import FCMSimulation
import HeraldPrimitives
import NIOCore
import Testing

@Suite("FCM simulator: faults on command", .timeLimit(.minutes(1)))
struct FaultTests {
    @Test("Injected 429, 500, 503, 502 and 401 THIRD_PARTY_AUTH_ERROR answer the next sends in order, then sends succeed")
    func statusFaults() async throws {
        let harness = try await Harness.start()
        let token = try await harness.accessToken()
        harness.simulator.inject(.quotaExceeded(retryAfterSeconds: 7))
        harness.simulator.inject(.internalError, count: 2)
        harness.simulator.inject(.unavailable(retryAfterSeconds: 3))
        harness.simulator.inject(.unavailable(retryAfterSeconds: nil))
        harness.simulator.inject(.badGatewayHTML)
        harness.simulator.inject(.thirdPartyAuthError)
        #expect(harness.simulator.pendingFaults == 7)

        let quota = try await harness.send(message(), token: token)
        #expect(quota.status == 429)
        #expect(quota.header("retry-after") == "7")
        #expect(googleError(quota).status == "RESOURCE_EXHAUSTED")
        #expect(googleError(quota).errorCode == "QUOTA_EXCEEDED")
        for _ in 0..<2 {
            let serverError = try await harness.send(message(), token: token)
            #expect(serverError.status == 500)
            #expect(googleError(serverError).status == "INTERNAL")
            #expect(googleError(serverError).errorCode == "INTERNAL")
        }
        let unavailable = try await harness.send(message(), token: token)
        #expect(unavailable.status == 503)
        #expect(unavailable.header("retry-after") == "3")
        #expect(googleError(unavailable).errorCode == "UNAVAILABLE")
        let bare = try await harness.send(message(), token: token)
        #expect(bare.status == 503)
        #expect(bare.header("retry-after") == nil)
        let html = try await harness.send(message(), token: token)
        #expect(html.status == 502)
        #expect(html.header("content-type")?.hasPrefix("text/html") == true)
        #expect(html.text.contains("<html"))
        #expect(json(html) == nil)
        let thirdParty = try await harness.send(message(), token: token)
        #expect(thirdParty.status == 401)
        #expect(googleError(thirdParty).status == "UNAUTHENTICATED")
        #expect(googleError(thirdParty).errorCode == "THIRD_PARTY_AUTH_ERROR")

        #expect(harness.simulator.acceptedCount == 0)
        #expect(try await harness.send(message(), token: token).status == 200)
        #expect(harness.simulator.pendingFaults == 0)
        #expect(harness.simulator.statusCounts[500] == 2)
        await harness.stop()
    }

    @Test("A real per-project quota bucket: empty answers 429 with the refill time, refilled on the simulator's clock")
    func quotaBucket() async throws {
        let harness = try await Harness.start { $0.quotaPerMinute = 2 }
        let token = try await harness.accessToken()
        let other = try await harness.accessToken(other: true)
        #expect(try await harness.send(message(), token: token).status == 200)
        #expect(try await harness.send(message(), token: token).status == 200)
        let refused = try await harness.send(message(), token: token)
        #expect(refused.status == 429)
        #expect(refused.header("retry-after") == "30")  // 2 a minute: one back in 30 s
        #expect(googleError(refused).errorCode == "QUOTA_EXCEEDED")
        // Another project has its own bucket.
        #expect(try await harness.send(message(), token: other, project: "other-project").status == 200)
        // An injected 429 without its own Retry-After takes the bucket's.
        harness.clock.advance(seconds: 10)
        harness.simulator.inject(.quotaExceeded(retryAfterSeconds: nil))
        #expect(try await harness.send(message(), token: token).header("retry-after") == "20")
        harness.clock.advance(seconds: 20)
        #expect(try await harness.send(message(), token: token).status == 200)
        #expect(try await harness.send(message(), token: token).status == 429)
        await harness.stop()
    }

    @Test("slow answers the request normally, later")
    func slow() async throws {
        let harness = try await Harness.start()
        let token = try await harness.accessToken()
        harness.simulator.inject(.slow(.milliseconds(300)))
        let clock = ContinuousClock()
        let start = clock.now
        let response = try await harness.send(message(), token: token)
        #expect(clock.now - start >= .milliseconds(300))
        #expect(response.status == 200)
        #expect(harness.simulator.acceptedCount == 1)
        await harness.stop()
    }

    @Test("goaway refuses the request unprocessed (REFUSED_STREAM) and closes the connection; a new one works")
    func goaway() async throws {
        let harness = try await Harness.start()
        let token = try await harness.accessToken()  // stream 1
        harness.simulator.inject(.goaway)
        await #expect(throws: H2TestError.reset(7)) { try await harness.send(message(), token: token) }
        #expect(try await harness.client.goAwayLastStreamID() == 1)
        try await harness.client.channel.closeFuture.get()
        #expect(harness.simulator.acceptedCount == 0)
        let again = try await H2TestClient.connect(port: harness.port, trusting: harness.simulator.certificatePEM)
        #expect(try await again.send(project: TestAccount.project, accessToken: token, body: message()).status == 200)
        await again.close()
        await harness.stop()
    }

    @Test("dropConnection closes the connection with the request unanswered; a new one works")
    func drop() async throws {
        let harness = try await Harness.start()
        let token = try await harness.accessToken()
        harness.simulator.inject(.dropConnection)
        await #expect(throws: H2TestError.connectionClosed) { try await harness.send(message(), token: token) }
        #expect(harness.simulator.acceptedCount == 0)
        let again = try await H2TestClient.connect(port: harness.port, trusting: harness.simulator.certificatePEM)
        #expect(try await again.send(project: TestAccount.project, accessToken: token, body: message()).status == 200)
        await again.close()
        await harness.stop()
    }

    @Test("clearFaults forgets what was not used")
    func clear() async throws {
        let harness = try await Harness.start()
        let token = try await harness.accessToken()
        harness.simulator.inject(.internalError, count: 5)
        harness.simulator.inject(.invalidGrant, count: 5)
        harness.simulator.clearFaults()
        #expect(harness.simulator.pendingFaults == 0)
        #expect(try await harness.send(message(), token: token).status == 200)
        await harness.stop()
    }
}
