import APNs
import APNsSimulation
import Foundation
import HeraldPrimitives
import HeraldTestSupport
import Synchronization
import Testing
import TLSTransport

@Suite("APNs client against the simulator (real TLS on loopback)", .timeLimit(.minutes(1)))
struct APNsClientTests {
    @Test("Headers reach the simulator exactly as rendered", arguments: [
        ("10", "alert"), ("5", "alert"), ("1", "alert"), ("5", "background"),
    ])
    func headersRoundTrip(priority: String, pushType: String) async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        let client = try APNsClient(configuration: clientConfiguration(key, simulator: simulator))
        let expiration = String(Int(Date().timeIntervalSince1970) + 3600)
        let apnsID = UUID().uuidString.lowercased()
        let payload = pushType == "background" ? #"{"aps":{"content-available":1}}"# : #"{"aps":{"alert":"x"}}"#
        let request = alertRequest(
            priority: priority, pushType: pushType, expiration: expiration, collapseID: "group-7",
            apnsID: apnsID, payload: payload)
        let response = try await client.send(request)
        #expect(response.status == 200)
        #expect(response.apnsID == apnsID)
        let delivery = try #require(simulator.delivered.first)
        #expect(delivery.header(":method") == "POST")
        #expect(delivery.header(":path") == "/3/device/\(deviceToken)")
        #expect(delivery.header("apns-push-type") == pushType)
        #expect(delivery.header("apns-topic") == "com.example.app")
        #expect(delivery.header("apns-priority") == priority)
        #expect(delivery.header("apns-expiration") == expiration)
        #expect(delivery.header("apns-collapse-id") == "group-7")
        #expect(delivery.header("apns-id") == apnsID)
        #expect(delivery.header("authorization")?.hasPrefix("bearer ") == true)
        #expect(delivery.payload == Array(payload.utf8))
        // Ordered as rendered: the apns-* headers keep the domain core's order.
        let order = delivery.headers.map(\.name).filter { $0.hasPrefix("apns-") }
        #expect(order == ["apns-push-type", "apns-topic", "apns-priority", "apns-expiration", "apns-collapse-id", "apns-id"])
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("Expiration 0 and a generated apns-id when none is sent")
    func expirationZeroAndGeneratedID() async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        let client = try APNsClient(configuration: clientConfiguration(key, simulator: simulator))
        let response = try await client.send(alertRequest(expiration: "0", apnsID: nil))
        #expect(response.status == 200)
        let apnsID = try #require(response.apnsID)
        #expect(apnsID == apnsID.lowercased() && apnsID.count == 36)
        #expect(simulator.delivered.first?.header("apns-expiration") == "0")
        #expect(simulator.deliveries(apnsID: apnsID) == 1)
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("The JWT is ES256 with kid, iss and iat, and the simulator verifies it")
    func jwtAccepted() async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        let clock = ManualAPNsClock(autoAdvance: true)
        let client = try APNsClient(configuration: clientConfiguration(key, simulator: simulator, clock: clock))
        #expect(try await client.send(alertRequest()).status == 200)
        let authorization = try #require(simulator.delivered.first?.header("authorization"))
        let jwt = authorization.dropFirst("bearer ".count)
        let parts = jwt.split(separator: ".")
        #expect(parts.count == 3)
        let header = try #require(Base64URL.decode(parts[0]))
        let claims = try #require(Base64URL.decode(parts[1]))
        #expect(String(decoding: header, as: UTF8.self) == #"{"alg":"ES256","kid":"KEY1234567"}"#)
        let iat = Int(clock.now().timeIntervalSince1970)
        #expect(String(decoding: claims, as: UTF8.self) == #"{"iss":"TEAM123456","iat":\#(iat)}"#)
        #expect(try #require(Base64URL.decode(parts[2])).count == 64)
        #expect(!jwt.contains("="))
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("A token signed by another key is InvalidProviderToken; no token is MissingProviderToken")
    func badProviderTokens() async throws {
        let key = try TestKey()
        let other = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        var configuration = clientConfiguration(key, simulator: simulator)
        configuration.credentials = .token(keyID: key.keyID, teamID: key.teamID, privateKeyPEM: other.privateKeyPEM)
        let forged = try APNsClient(configuration: configuration)
        let response = try await forged.send(alertRequest())
        #expect(response.status == 403)
        #expect(response.reason == .invalidProviderToken)
        await forged.shutdown()

        // Neither a token nor a client certificate.
        var bare = simulatorConfiguration(key)
        bare.acceptClientCertificates = false
        let strict = try await APNsSimulator.start(bare)
        var certificateConfiguration = clientConfiguration(key, simulator: strict)
        certificateConfiguration.credentials = .certificate(
            certificatePEM: testCertificate.certificatePEM, privateKeyPEM: testCertificate.keyPEM)
        let unauthenticated = try APNsClient(configuration: certificateConfiguration)
        let missing = try await unauthenticated.send(alertRequest())
        #expect(missing.status == 403)
        #expect(missing.reason == .missingProviderToken)
        await unauthenticated.shutdown()
        try await strict.stop()
        try await simulator.stop()
    }

    @Test("Certificate auth: the client certificate authenticates requests without a token")
    func certificateAuth() async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        var configuration = clientConfiguration(key, simulator: simulator)
        let identity = try SelfSignedCertificate.generate(commonName: "Apple Push Services: com.example.app")
        configuration.credentials = .certificate(certificatePEM: identity.certificatePEM, privateKeyPEM: identity.keyPEM)
        let client = try APNsClient(configuration: configuration)
        #expect(try await client.send(alertRequest()).status == 200)
        #expect(simulator.delivered.first?.header("authorization") == nil)
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("One token is reused until ~50 minutes, then refreshed once (no refresh storm)")
    func tokenReuseAndRefresh() async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        let clock = ManualAPNsClock(autoAdvance: false)
        var configuration = clientConfiguration(key, simulator: simulator, clock: clock)
        configuration.idleTimeout = nil  // the clock jumps by minutes: no idle close, one connection
        let client = try APNsClient(configuration: configuration)
        for _ in 0..<5 { #expect(try await client.send(alertRequest()).status == 200) }
        clock.advance(by: .seconds(30 * 60))
        #expect(try await client.send(alertRequest()).status == 200)
        #expect(await client.status().providerTokensMinted == 1)
        clock.advance(by: .seconds(21 * 60))  // 51 minutes old: refresh
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<200 { group.addTask { try await client.send(alertRequest()).status } }
            for try await status in group { #expect(status == 200) }
        }
        #expect(await client.status().providerTokensMinted == 2)
        let tokens = Set(simulator.delivered.compactMap { $0.header("authorization") })
        #expect(tokens.count == 2)
        #expect(simulator.providerTokenUpdates <= 2)
        #expect(simulator.statusCounts[429] == nil)
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("ExpiredProviderToken: reconnect with a fresh token and retry")
    func expiredProviderTokenRecovery() async throws {
        let key = try TestKey()
        let skew = Mutex<Double>(0)
        var configuration = simulatorConfiguration(key)
        configuration.now = { Timestamp.now.addingTimeInterval(skew.withLock { $0 }) }
        let simulator = try await APNsSimulator.start(configuration)
        let clock = ManualAPNsClock(autoAdvance: false)
        var clientSettings = clientConfiguration(key, simulator: simulator, clock: clock)
        clientSettings.idleTimeout = nil  // the clock jumps by 30 minutes: no idle close
        let client = try APNsClient(configuration: clientSettings)
        #expect(try await client.send(alertRequest()).status == 200)
        // APNs now thinks the token is 61 minutes old; our clock says 30.
        skew.withLock { $0 = 61 * 60 }
        clock.advance(by: .seconds(30 * 60))
        let apnsID = UUID().uuidString.lowercased()
        let response = try await client.send(alertRequest(apnsID: apnsID))
        #expect(response.status == 200)
        #expect(simulator.statusCounts[403] == 1)
        #expect(simulator.connectionsAccepted == 2)
        #expect(simulator.deliveries(apnsID: apnsID) == 1)
        #expect(await client.status().providerTokensMinted == 2)
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("410 Unregistered carries its timestamp in milliseconds")
    func unregistered() async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        simulator.updateFaults { $0.unregistered[deviceToken] = 1_700_000_000_123 }
        let client = try APNsClient(configuration: clientConfiguration(key, simulator: simulator))
        let response = try await client.send(alertRequest())
        #expect(response.status == 410)
        #expect(response.reason == .unregistered)
        #expect(response.timestampMilliseconds == 1_700_000_000_123)
        #expect(simulator.deliveredCount == 0)
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("429 TooManyRequests backs off that device token (1 s, 2 s) then succeeds")
    func tooManyRequestsBackoff() async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        simulator.updateFaults { $0.tooManyRequests[deviceToken] = 2 }
        let clock = ManualAPNsClock(autoAdvance: true)
        let client = try APNsClient(configuration: clientConfiguration(key, simulator: simulator, clock: clock))
        let response = try await client.send(alertRequest())
        #expect(response.status == 200)
        #expect(clock.sleeps == [.seconds(1), .seconds(2)])
        #expect(simulator.statusCounts[429] == 2)
        #expect(client.backoff(forDeviceToken: deviceToken) == nil)

        // Other tokens are not held back; a token whose backoff outlasts the deadline gets the 429.
        simulator.updateFaults { $0.tooManyRequests[deviceToken] = -1 }
        let limited = try await client.send(alertRequest(deadline: clock.now().addingTimeInterval(0.5)))
        #expect(limited.status == 429)
        #expect(limited.reason == .tooManyRequests)
        #expect(client.backoff(forDeviceToken: deviceToken) != nil)
        #expect(try await client.send(alertRequest(token: token(9))).status == 200)
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("500 and 503 are retried with full-jitter exponential backoff; without a deadline, up to maxAttempts")
    func serverErrorsRetried() async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        simulator.updateFaults { $0.failNext = 3 }
        let clock = ManualAPNsClock(autoAdvance: true)
        let client = try APNsClient(configuration: clientConfiguration(key, simulator: simulator, clock: clock))
        let apnsID = UUID().uuidString.lowercased()
        let response = try await client.send(alertRequest(apnsID: apnsID))
        #expect(response.status == 200)
        #expect(simulator.statusCounts[500] == 3)
        #expect(simulator.deliveries(apnsID: apnsID) == 1)
        let sleeps = clock.sleeps.map(\.timeInterval)
        #expect(sleeps.count == 3)
        for (index, delay) in sleeps.enumerated() {
            let base = pow(2, Double(index))  // 1 s doubling; full jitter: anywhere in 0...base
            #expect(delay >= 0 && delay <= base + 1e-9)
        }
        simulator.updateFaults { $0.failNext = 100; $0.serverErrorStatus = 503 }
        let exhausted = try await client.send(alertRequest())
        #expect(exhausted.status == 503)
        #expect(exhausted.reason == .serviceUnavailable)
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("GOAWAY with 500 notifications in flight: each delivered exactly once")
    func goAwayExactlyOnce() async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        simulator.updateFaults { $0.goAwayAfterStreams = 120 }
        var configuration = clientConfiguration(key, simulator: simulator)
        configuration.maxConnections = 2
        let client = try APNsClient(configuration: configuration)
        let ids = (0..<500).map { _ in UUID().uuidString.lowercased() }
        try await withThrowingTaskGroup(of: Int.self) { group in
            for (index, id) in ids.enumerated() {
                group.addTask { try await client.send(alertRequest(token: token(index), apnsID: id)).status }
            }
            for try await status in group { #expect(status == 200) }
        }
        #expect(simulator.deliveredCount == 500)
        #expect(ids.allSatisfy { simulator.deliveries(apnsID: $0) == 1 })
        #expect(simulator.connectionsAccepted >= 5)
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("Simulator restarted mid-run: the client reconnects with backoff (1 s, 2 s)")
    func reconnectsAfterRestart() async throws {
        let key = try TestKey()
        let first = try await APNsSimulator.start(simulatorConfiguration(key))
        let port = first.port
        let clock = ManualAPNsClock(autoAdvance: false)
        var configuration = clientConfiguration(key, simulator: first, clock: clock)
        configuration.maxConnections = 1
        configuration.retryBackoff = APNsBackoff(initial: .milliseconds(10), maximum: .milliseconds(10))
        let client = try APNsClient(configuration: configuration)
        #expect(try await client.send(alertRequest()).status == 200)
        try await first.stop()

        let apnsID = UUID().uuidString.lowercased()
        let pending = Task { try await client.send(alertRequest(apnsID: apnsID)) }
        var reconnectDelays: [Duration] = []
        var second: APNsSimulator?
        var rounds = 0
        while second == nil && rounds < 40 {
            rounds += 1
            // Retry pauses are sleeps; reconnect backoff is a timer on the same
            // clock. A connection's keep-alive check, and a stream started just
            // before the server went away, arm timers too: not what this counts.
            let delay = await clock.nextWait()
            if delay == configuration.responseTimeout || delay == configuration.pingInterval { continue }
            if delay >= .seconds(1) {
                reconnectDelays.append(delay)
                if reconnectDelays.count == 2 {
                    second = try await APNsSimulator.start(simulatorConfiguration(key, port: port))
                }
            }
            clock.advance(by: delay)
        }
        let response = try await pending.value
        #expect(response.status == 200)
        #expect(reconnectDelays == [.seconds(1), .seconds(2)])
        #expect(second?.deliveries(apnsID: apnsID) == 1)
        await client.shutdown()
        try await second?.stop()
    }

    @Test("Wrong CA: a clear TLS verification error, no retries")
    func wrongCA() async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        var configuration = clientConfiguration(key, simulator: simulator)
        configuration.trustedCAPEM = try SelfSignedCertificate.generate().certificatePEM
        let client = try APNsClient(configuration: configuration)
        do {
            _ = try await client.send(alertRequest())
            Issue.record("send should fail")
        } catch let error as APNsError {
            guard case .connectFailed(let message, let retryable) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(!retryable)
            #expect(message.contains("certificate verify failed"))
        }
        #expect(simulator.connectionsAccepted == 1)
        #expect(await client.status().lastError?.contains("certificate verify failed") == true)
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("A deadline shorter than the response delay fails with deadlineExceeded")
    func deadline() async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        simulator.updateFaults { $0.responseDelay = .seconds(5) }
        let client = try APNsClient(configuration: clientConfiguration(key, simulator: simulator))
        await #expect(throws: APNsError.deadlineExceeded) {
            try await client.send(alertRequest(deadline: Timestamp.now.addingTimeInterval(0.2)))
        }
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("Quiet connections are PINGed, idle ones closed (keep-alive on the manual clock)")
    func keepAliveAndIdleClose() async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        let events = simulator.events()
        let clock = ManualAPNsClock(autoAdvance: false)
        var configuration = clientConfiguration(key, simulator: simulator, clock: clock)
        configuration.maxConnections = 1
        configuration.pingInterval = .seconds(60)
        configuration.idleTimeout = .seconds(600)
        let client = try APNsClient(configuration: configuration)
        #expect(try await client.send(alertRequest()).status == 200)
        await clock.waitForTimers(1)  // the keep-alive check, armed
        // Quiet for a ping interval: one PING, whatever the wall clock says.
        clock.advance(by: .seconds(59))
        #expect(clock.pendingTimers == 1)
        clock.advance(by: .seconds(1))
        var pings = 0
        var closed = false
        for await event in events {
            switch event {
            case .ping: pings += 1
            case .connectionClosed: closed = true
            case .connectionOpened, .requestHeld, .goAwayReceived: break
            }
            if pings == 1 { break }
        }
        #expect(!closed)
        // No stream for the idle timeout: the connection is retired and closed.
        clock.advance(by: .seconds(540))
        for await event in events {
            if case .connectionClosed = event { break }
        }
        #expect(pings == 1)
        #expect(await client.status().connectionsOpen == 0)
        // The next send opens a fresh connection.
        let acceptedBefore = simulator.connectionsAccepted
        #expect(try await client.send(alertRequest()).status == 200)
        #expect(simulator.connectionsAccepted == acceptedBefore + 1)
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("Streams beyond the peer's SETTINGS_MAX_CONCURRENT_STREAMS wait in the local queue")
    func localQueueing() async throws {
        let key = try TestKey()
        var simulatorSettings = simulatorConfiguration(key)
        simulatorSettings.maxConcurrentStreams = 8
        simulatorSettings.faults.responseDelay = .milliseconds(5)
        let simulator = try await APNsSimulator.start(simulatorSettings)
        var configuration = clientConfiguration(key, simulator: simulator)
        configuration.maxConnections = 1
        let client = try APNsClient(configuration: configuration)
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<200 { group.addTask { try await client.send(alertRequest(token: token(index))).status } }
            for try await status in group { #expect(status == 200) }
        }
        #expect(simulator.deliveredCount == 200)
        #expect(simulator.maxConcurrentStreamsSeen == 8)
        #expect(simulator.connectionsAccepted == 1)
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("Cancelling the caller withdraws an in-flight request; the connection stays usable")
    func cancellation() async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        simulator.updateFaults { $0.responseDelay = .seconds(30) }
        let client = try APNsClient(configuration: clientConfiguration(key, simulator: simulator))
        let task = Task { try await client.send(alertRequest()) }
        await simulator.waitForDeliveries(count: 1)  // recorded before the delayed answer
        task.cancel()
        await #expect(throws: APNsError.cancelled) { try await task.value }
        #expect(await client.status().streamsInFlight == 0)
        simulator.updateFaults { $0.responseDelay = .zero }
        #expect(try await client.send(alertRequest()).status == 200)
        #expect(simulator.connectionsAccepted == 1)
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("Pool status reports the endpoint and open connections")
    func poolStatus() async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        var configuration = clientConfiguration(key, simulator: simulator)
        configuration.maxConnections = 2
        let client = try APNsClient(configuration: configuration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<50 { group.addTask { _ = try await client.send(alertRequest(token: token(index))) } }
            try await group.waitForAll()
        }
        let status = await client.status()
        #expect(status.endpoint == APNsEndpoint(host: "127.0.0.1", port: simulator.port))
        #expect(status.connectionsOpen == 2)
        #expect(status.streamsInFlight == 0)
        await client.shutdown()
        try await simulator.stop()
    }
}

@Suite("Pool registry", .timeLimit(.minutes(1)))
struct APNsPoolRegistryTests {
    @Test("One pool per team and endpoint; teams never share connections")
    func poolsPerTeam() async throws {
        let teamA = try TestKey()
        let teamB = try TestKey()
        var settings = simulatorConfiguration(teamA)
        settings.keyID = nil
        settings.teamID = nil
        settings.publicKeyPEM = nil  // accepts both teams' signatures
        let simulator = try await APNsSimulator.start(settings)
        let registry = APNsPoolRegistry()
        let endpoint = APNsEndpoint(host: "127.0.0.1", port: simulator.port)
        let keyA = APNsPoolKey.token(teamID: "TEAMA", keyID: "KEYA", endpoint: endpoint)
        let keyB = APNsPoolKey.token(teamID: "TEAMB", keyID: "KEYB", endpoint: endpoint)
        let clientA = try registry.client(for: keyA) { clientConfiguration(teamA, simulator: simulator) }
        let again = try registry.client(for: keyA) { Issue.record("made twice"); return clientConfiguration(teamA, simulator: simulator) }
        #expect(clientA === again)
        let clientB = try registry.client(for: keyB) { clientConfiguration(teamB, simulator: simulator) }
        #expect(try await clientA.send(alertRequest()).status == 200)
        #expect(try await clientB.send(alertRequest()).status == 200)
        let connections = Set(simulator.delivered.map(\.connectionID))
        #expect(connections.count == 2)
        #expect(await registry.statuses().map(\.key) == [keyA, keyB])
        await registry.shutdown()
        try await simulator.stop()
    }
}
