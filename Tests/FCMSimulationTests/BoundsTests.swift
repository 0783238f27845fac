import FCMSimulation
import HeraldPrimitives
import NIOCore
import NIOPosix
import Testing

@Suite("FCM simulator: bounds and hostile peers", .timeLimit(.minutes(1)))
struct BoundsTests {
    @Test("Garbage, truncated TLS and plain HTTP never crash the simulator")
    func garbage() async throws {
        let harness = try await Harness.start()
        // (A truncated ClientHello waits for the handshake timeout: see the next test.)
        let inputs: [[UInt8]] = [
            Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8),
            (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) },
        ]
        for input in inputs {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: harness.port).get()
            try? await channel.writeAndFlush(channel.allocator.buffer(bytes: input)).get()
            try await channel.closeFuture.get()  // the simulator hangs up
        }
        #expect(try await harness.send(message(), token: try await harness.accessToken()).status == 200)
        await harness.stop()
    }

    @Test("A peer that never finishes the TLS handshake is closed after the handshake timeout")
    func handshakeTimeout() async throws {
        var configuration = FCMSimulatorConfiguration(accounts: [TestAccount.account])
        configuration.handshakeTimeout = .milliseconds(200)
        let simulator = try FCMSimulator(configuration: configuration, logger: testLogger)
        let port = try await simulator.start()
        for input: [UInt8] in [[], [0x16, 0x03, 0x01, 0x00, 0x05, 0x01]] {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: port).get()
            try? await channel.writeAndFlush(channel.allocator.buffer(bytes: input)).get()
            try await channel.closeFuture.get()
        }
        await simulator.shutdown()
    }

    @Test("An idle connection is closed after the idle timeout, with a GOAWAY")
    func idleTimeout() async throws {
        let harness = try await Harness.start { $0.idleTimeout = .milliseconds(300) }
        try await harness.client.channel.closeFuture.get()
        #expect(try await harness.client.goAwayLastStreamID() == 0)
        await harness.simulator.shutdown()
    }

    @Test("A request not received whole within the request timeout is reset; the connection stays usable")
    func requestTimeout() async throws {
        let harness = try await Harness.start { $0.requestTimeout = .milliseconds(300) }
        await #expect(throws: H2TestError.reset(8)) {  // CANCEL
            try await harness.client.requestNeverEnding(path: "/token")
        }
        #expect(try await harness.requestToken(harness.assertion()).status == 200)
        await harness.stop()
    }

    @Test("Connections beyond maxConnections are closed as they are accepted")
    func maxConnections() async throws {
        let harness = try await Harness.start { $0.maxConnections = 1 }
        await #expect(throws: (any Error).self) {
            try await H2TestClient.connect(port: harness.port, trusting: harness.simulator.certificatePEM)
        }
        #expect(try await harness.requestToken(harness.assertion()).status == 200)
        await harness.stop()
    }

    @Test("Advertises 100 concurrent streams; a too-large header list is refused, the connection stays usable")
    func headerLimits() async throws {
        let harness = try await Harness.start()
        #expect(try await harness.client.remoteMaxConcurrentStreams() == 100)
        let token = try await harness.accessToken()
        let headers = (0..<80).map { (name: "x-filler-\($0)", value: "v") }
        let many = try await harness.client.request(path: "/v1/projects/\(TestAccount.project)/messages:send", headers: headers)
        #expect(many.status == 431)
        let big = try await harness.client.request(path: "/token", headers: [("x-big", String(repeating: "b", count: 15_000)), ("x-big2", String(repeating: "b", count: 2000))])
        #expect(big.status == 431)
        #expect(try await harness.send(message(), token: token).status == 200)
        await harness.stop()
    }

    @Test("Many concurrent sends on one connection are each answered")
    func concurrent() async throws {
        let harness = try await Harness.start()
        let token = try await harness.accessToken()
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<150 {
                group.addTask { try await harness.send(message(#""data":{"i":"\#(index)"}"#), token: token).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.count == 150)
        #expect(statuses.allSatisfy { $0 == 200 })
        await harness.simulator.waitForAccepted(count: 150)
        #expect(Set(harness.simulator.accepted().map(\.name)).count == 150)
        await harness.stop()
    }

    @Test("acceptedStream yields accepted messages from subscription on, and ends at shutdown")
    func stream() async throws {
        let harness = try await Harness.start { $0.keepAccepted = false }
        let token = try await harness.accessToken()
        #expect(try await harness.send(message(#""data":{"n":"0"}"#), token: token).status == 200)
        let stream = harness.simulator.acceptedStream()
        #expect(try await harness.send(message(#""data":{"n":"1"}"#), token: token).status == 200)
        #expect(try await harness.send(message(token: "bad token"), token: token).status == 400)
        #expect(try await harness.send(message(#""data":{"n":"2"}"#), token: token).status == 200)
        await harness.stop()
        var seen: [String] = []
        for await accepted in stream { seen.append(String(decoding: accepted.message, as: UTF8.self)) }
        #expect(seen.count == 2)
        #expect(seen.allSatisfy { !$0.contains(#""n":"0""#) })
        #expect(harness.simulator.accepted().isEmpty)
        #expect(harness.simulator.acceptedCount == 3)
        // Subscribing after shutdown gives an ended stream.
        for await _ in harness.simulator.acceptedStream() { Issue.record("a message after shutdown") }
    }

    @Test("shutdown closes open connections and releases waiters")
    func shutdown() async throws {
        let harness = try await Harness.start()
        async let waited: Void = harness.simulator.waitForAccepted(count: 1)
        await harness.simulator.shutdown()
        await waited
        try await harness.client.channel.closeFuture.get()
    }
}
