import FCM
import FCMSimulation
import HeraldPrimitives
import HeraldTestSupport
import Logging
import Synchronization
import Testing
import TLSTransport

/// The simulator and a client for one project, on loopback. With a manual
/// clock, both read it (token expiry, JWT checks, quota) and the test moves it.
final class Loopback: Sendable {
    let simulator: FCMSimulator
    let client: FCMClient
    let clock: ManualFCMClock?
    /// How far the simulator's clock runs ahead of the client's (to expire a token the client still trusts).
    let simulatorAhead: Offset

    static let project = "herald-test"

    init(simulator: FCMSimulator, client: FCMClient, clock: ManualFCMClock?, simulatorAhead: Offset) {
        self.simulator = simulator
        self.client = client
        self.clock = clock
        self.simulatorAhead = simulatorAhead
    }

    static func start(
        clock: ManualFCMClock? = nil, tokenLifetime: Duration = .seconds(3600), quotaPerMinute: Int? = nil,
        configure: (inout FCMClientConfiguration) -> Void = { _ in }
    ) async throws -> Loopback {
        let account = testAccount(project: project)
        var simulated = FCMSimulatorConfiguration(accounts: [FCMSimulatedAccount(
            projectID: account.projectID, clientEmail: account.clientEmail, privateKeyID: account.privateKeyID,
            publicKeyPEM: sharedRSAKey.publicKeyPEM)])
        simulated.accessTokenLifetime = tokenLifetime
        simulated.quotaPerMinute = quotaPerMinute
        let ahead = Offset()
        if let clock { simulated.now = { clock.now().addingTimeInterval(ahead.seconds.withLock { $0 }) } }
        let simulator = try FCMSimulator(configuration: simulated, logger: Logger(label: "test.fcm-sim"))
        let port = try await simulator.start()
        var configuration = FCMClientConfiguration(
            serviceAccount: account, endpoint: FCMEndpoint(host: "127.0.0.1", port: port), tokenURL: simulator.tokenURL)
        configuration.caPEM = simulator.certificatePEM
        if let clock { configuration.clock = clock }
        configure(&configuration)
        let client = try FCMClient(configuration: configuration, logger: Logger(label: "test.fcm"))
        return Loopback(simulator: simulator, client: client, clock: clock, simulatorAhead: ahead)
    }

    func stop() async {
        await client.shutdown()
        await simulator.shutdown()
    }

    func request(token: String = "device-token-1", deadline: Timestamp? = nil, singleAttempt: Bool = false) -> FCMRequest {
        FCMRequest(projectID: Self.project, deviceToken: token, body: messageBody(token: token), deadline: deadline, singleAttempt: singleAttempt)
    }
}

/// Seconds one clock runs ahead of another.
final class Offset: Sendable {
    let seconds = Mutex<Double>(0)
}

func messageBody(token: String) -> [UInt8] {
    bytes(#"{"message":{"token":"\#(token)","notification":{"title":"Hi","body":"There"},"data":{"k":"v"},"android":{"priority":"HIGH","ttl":"60s"}}}"#)
}

extension FCMTestSuites {
    @Suite(.timeLimit(.minutes(1))) struct FCMLoopbackTests {
        @Test func aSendIsAcceptedEndToEnd() async throws {
            let loopback = try await Loopback.start()
            let response = try await loopback.client.send(loopback.request())
            #expect(response.status == 200)
            #expect(response.isSuccess)
            #expect(response.attempts == 1)
            #expect(response.messageName?.hasPrefix("projects/herald-test/messages/") == true)
            let accepted = loopback.simulator.accepted()
            #expect(accepted.count == 1)
            #expect(accepted.first?.token == "device-token-1")
            #expect(accepted.first?.name == response.messageName)
            let message = String(decoding: accepted.first?.message ?? [], as: UTF8.self)
            #expect(message.contains(#""priority":"HIGH""#))
            let status = await loopback.client.status()
            #expect(status.accessTokensMinted == 1)
            #expect(status.connectionsOpen >= 1)
            #expect(loopback.simulator.accessTokensMinted == 1)
            // A second send reuses the token and the connection.
            #expect(try await loopback.client.send(loopback.request(token: "device-token-2")).isSuccess)
            #expect(await loopback.client.status().accessTokensMinted == 1)
            await loopback.stop()
        }

        @Test func theCAFileIsTrusted() async throws {
            let directory = try makeTemporaryDirectory(prefix: "fcm-ca")
            defer { removeTemporaryDirectory(directory) }
            let path = directory + "/ca.pem"
            let loopback = try await Loopback.start { configuration in
                try! POSIXFile.writeAtomically(path, bytes: Array((configuration.caPEM ?? "").utf8))
                configuration.caPEM = nil
                configuration.caFile = path
            }
            #expect(try await loopback.client.send(loopback.request()).isSuccess)
            await loopback.stop()
        }

        @Test func aWrongCAIsAClearTLSError() async throws {
            let other = try SelfSignedCertificate.generate()
            let loopback = try await Loopback.start { $0.caPEM = other.certificatePEM }
            do {
                _ = try await loopback.client.send(loopback.request())
                Issue.record("sent through an untrusted certificate")
            } catch let error as FCMError {
                #expect("\(error)".contains("certificate"), "\(error)")
            }
            #expect(loopback.simulator.acceptedCount == 0)
            await loopback.stop()
        }

        @Test func invalidGrantIsATokenEndpointError() async throws {
            let loopback = try await Loopback.start()
            loopback.simulator.inject(.invalidGrant)
            do {
                _ = try await loopback.client.send(loopback.request())
                Issue.record("sent without a token")
            } catch let error as FCMError {
                guard case .tokenEndpoint(let why) = error else { Issue.record("\(error)"); return }
                #expect(why.contains("invalid_grant"), "\(why)")
            }
            // The next send fetches a token and goes through.
            #expect(try await loopback.client.send(loopback.request()).isSuccess)
            await loopback.stop()
        }

        @Test func registryAnswersAreMapped() async throws {
            let loopback = try await Loopback.start()
            loopback.simulator.setToken("gone-token-1", project: Loopback.project, state: .unregistered)
            loopback.simulator.setToken("other-sender-1", project: Loopback.project, state: .otherSender)
            let gone = try await loopback.client.send(loopback.request(token: "gone-token-1"))
            #expect(gone.status == 404)
            #expect(gone.errorCode == .unregistered)
            #expect(gone.attempts == 1)
            let other = try await loopback.client.send(loopback.request(token: "other-sender-1"))
            #expect(other.status == 403)
            #expect(other.errorCode == .senderIDMismatch)
            var bad = loopback.request()
            bad.body = bytes(#"{"message":{"token":"device-token-1","android":{"ttl":"forever"}}}"#)
            let invalid = try await loopback.client.send(bad)
            #expect(invalid.status == 400)
            #expect(invalid.errorCode == .invalidArgument)
            #expect(invalid.errorMessage?.contains("android.ttl") == true, "\(invalid.errorMessage ?? "")")
            #expect(invalid.attempts == 1)
            await loopback.stop()
        }

        @Test func tokenRefreshIsDrivenByTheClock() async throws {
            let clock = ManualFCMClock(start: .now)
            let loopback = try await Loopback.start(clock: clock, tokenLifetime: .seconds(120))
            #expect(try await loopback.client.send(loopback.request()).isSuccess)
            #expect(await loopback.client.status().accessTokensMinted == 1)
            // Half-life (60 s) passes: a refresh starts in the background; the current token is still used.
            clock.advance(by: .seconds(61))
            #expect(try await loopback.client.send(loopback.request()).isSuccess)
            // The clock moves on only once that refresh has landed: a jump past the fetch's own
            // deadline while it is in flight would fail that fetch (a retryable failure) and the next
            // send would then wait out a backoff on a clock nobody moves.
            await loopback.client.accessTokenFetchSettled()
            #expect(await loopback.client.status().accessTokensMinted == 2)
            // Past the first token's lifetime (less the client's safety margin): the client uses the
            // new one, never the expired one, which the simulator (its clock 15 s ahead) now refuses.
            clock.advance(by: .seconds(50))
            loopback.simulatorAhead.seconds.withLock { $0 = 15 }
            let response = try await loopback.client.send(loopback.request())
            #expect(response.isSuccess)
            #expect(response.attempts == 1)
            #expect(loopback.simulator.statusCounts[401] == nil)
            #expect(await loopback.client.status().accessTokensMinted == 2)
            #expect(loopback.simulator.accessTokensMinted == 2)
            await loopback.stop()
        }

        @Test func a401RefreshesTheTokenOnceAndRetries() async throws {
            let clock = ManualFCMClock(start: .now)
            let loopback = try await Loopback.start(clock: clock, tokenLifetime: .seconds(600))
            #expect(try await loopback.client.send(loopback.request()).isSuccess)
            // The simulator's clock jumps past the token's expiry; the client's does not: FCM answers 401.
            loopback.simulatorAhead.seconds.withLock { $0 = 700 }
            let response = try await loopback.client.send(loopback.request())
            #expect(response.isSuccess)
            #expect(response.attempts == 2)
            #expect(await loopback.client.status().accessTokensMinted == 2)
            #expect(loopback.simulator.statusCounts[401] == 1)
            await loopback.stop()
        }

        @Test func quotaExceededWaitsForRetryAfterThenSucceeds() async throws {
            let clock = ManualFCMClock(start: .now)
            let loopback = try await Loopback.start(clock: clock)
            loopback.simulator.inject(.quotaExceeded(retryAfterSeconds: 30))
            let sending = Task { try await loopback.client.send(loopback.request()) }
            #expect(await clock.nextSleep() == .seconds(30))
            clock.advance(by: .seconds(30))
            let response = try await sending.value
            #expect(response.isSuccess)
            #expect(response.attempts == 2)
            await loopback.stop()
        }

        @Test func quotaExceededWithoutRetryAfterWaitsAMinute() async throws {
            let clock = ManualFCMClock(start: .now)
            let loopback = try await Loopback.start(clock: clock)
            loopback.simulator.inject(.quotaExceeded(retryAfterSeconds: nil))
            let sending = Task { try await loopback.client.send(loopback.request()) }
            #expect(await clock.nextSleep() >= .seconds(60))
            clock.advance(by: .seconds(600))
            #expect(try await sending.value.isSuccess)
            await loopback.stop()
        }

        @Test func aWaitPastTheDeadlineReturnsTheLastAnswer() async throws {
            let clock = ManualFCMClock(start: .now)
            let loopback = try await Loopback.start(clock: clock)
            loopback.simulator.inject(.quotaExceeded(retryAfterSeconds: 120))
            let response = try await loopback.client.send(loopback.request(deadline: clock.now().addingTimeInterval(60)))
            #expect(response.status == 429)
            #expect(response.errorCode == .quotaExceeded)
            #expect(response.retryAfter == .seconds(120))
            #expect(response.attempts == 1)
            #expect(clock.sleeps.isEmpty)
            await loopback.stop()
        }

        @Test func unavailableAndInternalAreRetried() async throws {
            let clock = ManualFCMClock(start: .now, autoAdvance: true)
            let loopback = try await Loopback.start(clock: clock)
            loopback.simulator.inject(.unavailable(retryAfterSeconds: 7))
            loopback.simulator.inject(.internalError)
            loopback.simulator.inject(.badGatewayHTML)
            let response = try await loopback.client.send(loopback.request())
            #expect(response.isSuccess)
            #expect(response.attempts == 4)
            #expect(clock.sleeps.first == .seconds(7))
            #expect(clock.sleeps.count == 3)
            await loopback.stop()
        }

        @Test func thirdPartyAuthErrorIsFinal() async throws {
            let loopback = try await Loopback.start()
            loopback.simulator.inject(.thirdPartyAuthError)
            let response = try await loopback.client.send(loopback.request())
            #expect(response.status == 401)
            #expect(response.errorCode == .thirdPartyAuthError)
            #expect(response.errorMessage?.contains("APNS or Web Push") == true, "\(response.errorMessage ?? "")")
            #expect(response.attempts == 1)
            // Not the access token's fault: no refresh.
            #expect(await loopback.client.status().accessTokensMinted == 1)
            #expect(loopback.simulator.acceptedCount == 0)
            #expect(try await loopback.client.send(loopback.request()).isSuccess)
            await loopback.stop()
        }

        @Test func singleAttemptDoesNotRetry() async throws {
            let clock = ManualFCMClock(start: .now, autoAdvance: true)
            let loopback = try await Loopback.start(clock: clock)
            loopback.simulator.inject(.badGatewayHTML)
            let response = try await loopback.client.send(loopback.request(singleAttempt: true))
            #expect(response.status == 502)
            #expect(response.errorCode == .unavailable)
            #expect(response.errorMessage?.contains("not a google.rpc.Status") == true)
            #expect(response.attempts == 1)
            #expect(clock.sleeps.isEmpty)
            await loopback.stop()
        }

        @Test func goawayAndDroppedConnectionsAreRecovered() async throws {
            let clock = ManualFCMClock(start: .now, autoAdvance: true)
            let loopback = try await Loopback.start(clock: clock)
            #expect(try await loopback.client.send(loopback.request()).isSuccess)
            loopback.simulator.inject(.goaway)
            let afterGoaway = try await loopback.client.send(loopback.request(token: "device-token-2"))
            #expect(afterGoaway.isSuccess)
            #expect(afterGoaway.attempts == 1)  // refused unprocessed: resent, not a retry
            loopback.simulator.inject(.dropConnection)
            let afterDrop = try await loopback.client.send(loopback.request(token: "device-token-3"))
            #expect(afterDrop.isSuccess)
            #expect(afterDrop.attempts == 2)
            #expect(loopback.simulator.connectionsAccepted >= 3)
            await loopback.stop()
        }

        @Test func theClientsBucketPacesSendsAndTheSimulatorsQuotaIsHonoured() async throws {
            let clock = ManualFCMClock(start: .now, autoAdvance: true)
            // The client may send 60 a minute (bursts of 1); the simulator allows 2 a minute (bursts of 2).
            let loopback = try await Loopback.start(clock: clock, quotaPerMinute: 2) { $0.ratePerMinute = 60 }
            #expect(try await loopback.client.send(loopback.request()).isSuccess)
            #expect(clock.sleeps.isEmpty)
            #expect(try await loopback.client.send(loopback.request()).isSuccess)
            #expect(clock.sleeps == [.seconds(1)])  // the client's own bucket
            // The simulator's bucket is now empty: 429 with its Retry-After, waited out, then accepted.
            let third = try await loopback.client.send(loopback.request())
            #expect(third.isSuccess)
            #expect(third.attempts == 2)
            #expect(loopback.simulator.statusCounts[429] == 1)
            await loopback.stop()
        }

        @Test func manyConcurrentSendsComplete() async throws {
            let loopback = try await Loopback.start()
            let count = 4_000
            let successes = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<count {
                    group.addTask { try await loopback.client.send(loopback.request(token: "device-token-\(index)")).isSuccess }
                }
                var successes = 0
                for try await success in group where success { successes += 1 }
                return successes
            }
            #expect(successes == count)
            #expect(loopback.simulator.acceptedCount == count)
            #expect(await loopback.client.status().accessTokensMinted == 1)
            await loopback.stop()
        }
    }
}
