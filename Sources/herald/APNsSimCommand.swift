import APNsSimulation
import HeraldPrimitives
import TLSTransport
import ArgumentParser
import Dispatch
import HeraldService
import HeraldStorage
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `herald apns-sim`: runs the local APNs simulator.
///
/// JWTs are verified against `--public-key` when given; without it any
/// signature is accepted (the token's form, `kid`/`iss` when configured, and
/// age are still checked).
struct APNsSimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-sim",
        abstract: "Run the local APNs simulator (HTTP/2 over TLS).",
        discussion: """
            Prints `listening on HOST:PORT` once ready. Without --cert/--key a self-signed
            certificate is generated; --ca-out writes it (the CA clients must trust).
            Without --public-key, JWT signatures are not checked.
            With --bench-connect it instead runs a load client against a simulator.
            """
    )

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port (0 picks a free one).") var port = 0
    @Option(help: "Server certificate PEM file.") var cert: String?
    @Option(help: "Server private key PEM file.") var key: String?
    @Option(name: .customLong("ca-out"), help: "Write the certificate clients must trust to this file.") var caOut: String?
    @Option(name: .customLong("key-id"), help: "Expected JWT kid.") var keyID: String?
    @Option(name: .customLong("team-id"), help: "Expected JWT iss.") var teamID: String?
    @Option(name: .customLong("public-key"), help: "ES256 public key PEM file verifying JWT signatures.") var publicKey: String?
    @Option(help: "Allowed apns-topic values, comma-separated (default: any).") var topics: String?
    @Flag(name: .customLong("allow-missing-token"), help: "Accept requests without a provider token.") var allowMissingToken = false
    @Option(name: .customLong("max-streams"), help: "SETTINGS_MAX_CONCURRENT_STREAMS.") var maxStreams = 1000
    @Option(help: "Answer 410 Unregistered for TOKEN[:timestamp-ms] (repeatable).") var unregistered: [String] = []
    @Option(name: .customLong("bad-token"), help: "Answer 400 BadDeviceToken for this token (repeatable).") var badTokens: [String] = []
    @Option(name: .customLong("too-many-requests"), help: "Answer 429 TooManyRequests for this token (repeatable).") var tooManyRequests: [String] = []
    @Option(name: .customLong("error-rate"), help: "Fraction of requests answered with --error-status.") var errorRate = 0.0
    @Option(name: .customLong("error-status"), help: "500 or 503.") var errorStatus = 500
    @Option(name: .customLong("goaway-after"), help: "Send GOAWAY after this many streams per connection.") var goAwayAfter: Int?
    @Option(name: .customLong("delay-ms"), help: "Delay every response by this many milliseconds.") var delayMilliseconds = 0
    @Option(help: "Never answer requests for this device token or apns-topic (repeatable): a hung endpoint.") var hang: [String] = []
    @Flag(help: "Do not log accepted notifications (one stderr line each by default).") var quiet = false
    @Option(help: "Append each accepted notification to this file as a JSON line (as `serve --sim-record`).") var record: String?

    // Bench client mode.
    @Option(name: .customLong("bench-connect"), help: "Bench client: simulator HOST:PORT to load.") var benchConnect: String?
    @Option(name: .customLong("bench-ca"), help: "Bench client: CA file to trust.") var benchCA: String?
    @Option(name: .customLong("bench-p8"), help: "Bench client: .p8 key file.") var benchKey: String?
    @Option(name: .customLong("bench-count"), help: "Bench client: notifications to send.") var benchCount = 100_000
    @Option(name: .customLong("bench-connections"), help: "Bench client: pool connections.") var benchConnections = 1
    @Option(name: .customLong("bench-concurrency"), help: "Bench client: requests in flight.") var benchConcurrency = 1000

    func run() async throws {
        if let target = benchConnect {
            try await APNsBench(
                target: target, caFile: benchCA, keyFile: benchKey, keyID: keyID ?? "BENCHKEY1",
                teamID: teamID ?? "BENCHTEAM1", count: benchCount, connections: benchConnections,
                concurrency: benchConcurrency
            ).run()
            return
        }
        var configuration = APNsSimulatorConfiguration()
        configuration.host = host
        configuration.port = port
        if let cert, let key {
            configuration.certificatePEM = try POSIXFile.readText(cert)
            configuration.keyPEM = try POSIXFile.readText(key)
        } else if cert != nil || key != nil {
            throw ValidationError("--cert and --key go together")
        }
        configuration.keyID = keyID
        configuration.teamID = teamID
        if let publicKey { configuration.publicKeyPEM = try POSIXFile.readText(publicKey) }
        if let topics {
            configuration.allowedTopics = Set(topics.split(separator: ",").map { $0.trimmingSpaces() })
        }
        configuration.allowMissingProviderToken = allowMissingToken
        configuration.maxConcurrentStreams = maxStreams
        configuration.recordDeliveries = false  // nobody can read them from outside the process
        guard errorStatus == 500 || errorStatus == 503 else { throw ValidationError("--error-status must be 500 or 503") }
        guard (0...1).contains(errorRate) else { throw ValidationError("--error-rate must be within 0...1") }
        var faults = APNsSimulatorFaults()
        for entry in unregistered {
            let parts = entry.split(separator: ":", maxSplits: 1)
            let timestamp = parts.count > 1 ? Int64(parts[1]) : nil
            faults.unregistered[String(parts[0])] = timestamp ?? Timestamp.nowMilliseconds()
        }
        faults.badTokens = Set(badTokens)
        for token in tooManyRequests { faults.tooManyRequests[token] = -1 }
        faults.serverErrorRate = errorRate
        faults.serverErrorStatus = errorStatus
        faults.goAwayAfterStreams = goAwayAfter
        faults.responseDelay = .milliseconds(delayMilliseconds)
        faults.hang = Set(hang)
        configuration.faults = faults

        let simulator = try await APNsSimulator.start(configuration)
        if let caOut {
            try POSIXFile.writeAtomically(caOut, bytes: Array(simulator.caCertificatePEM.utf8), mode: 0o644)
        }
        // Child tasks, not detached ones: both end when the simulator stops
        // (its delivery streams finish), and the group awaits them, so every
        // accepted notification is logged and recorded before exit.
        try await withThrowingDiscardingTaskGroup { group in
            if !quiet {
                let deliveries = simulator.deliveryStream()
                group.addTask {
                    for await delivery in deliveries {
                        let line = "delivered apns-id=\(delivery.apnsID) token=\(delivery.deviceToken.prefix(8))… "
                            + "topic=\(delivery.header("apns-topic") ?? "-") type=\(delivery.header("apns-push-type") ?? "-") "
                            + "bytes=\(delivery.payload.count) connection=\(delivery.connectionID)\n"
                        writeUnbuffered(line, to: 2)
                    }
                }
            }
            if let record {
                let logger = Logger(label: "herald.apns-sim")
                let deliveries = simulator.deliveryStream()  // subscribed before `listening` is printed
                group.addTask { await SimulatorRecorder.record(deliveries, to: record, logger: logger) }
            }
            // Unbuffered: scripts wait for this line on a pipe.
            writeUnbuffered("listening on \(simulator.host):\(simulator.port)\n", to: 1)
            await Self.waitForTerminationSignal()
            try await simulator.stop()
        }
    }

    /// Returns on SIGTERM or SIGINT (so the simulator exits 0 and closes its connections).
    static func waitForTerminationSignal() async {
        let (signals, continuation) = AsyncStream<Int32>.makeStream()
        let sources = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
        for await _ in signals { break }
        for source in sources { source.cancel() }
    }
}
