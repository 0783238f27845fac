import APNsSimulator
import Dispatch
import HeraldStore

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
struct APNsSimCommand {
    static func spec() -> CommandSpec {
        CommandSpec(
            name: "apns-sim", abstract: "Run the local APNs simulator (HTTP/2 over TLS).",
            discussion: """
                Prints `listening on HOST:PORT` once ready. Without --cert/--key a self-signed
                certificate is generated; --ca-out writes it (the CA clients must trust).
                Without --public-key, JWT signatures are not checked.
                With --bench-connect it instead runs a load client against a simulator.
                """,
            options: [
                .option("host", "Address to listen on.", default: defaultText("127.0.0.1")),
                .option("port", "Port (0 picks a free one).", default: defaultText(0)),
                .option("cert", "Server certificate PEM file."),
                .option("key", "Server private key PEM file."),
                .option("ca-out", "Write the certificate clients must trust to this file."),
                .option("key-id", "Expected JWT kid."),
                .option("team-id", "Expected JWT iss."),
                .option("public-key", "ES256 public key PEM file verifying JWT signatures."),
                .option("topics", "Allowed apns-topic values, comma-separated (default: any)."),
                .flag("allow-missing-token", "Accept requests without a provider token."),
                .option("max-streams", "SETTINGS_MAX_CONCURRENT_STREAMS.", default: defaultText(1000)),
                .repeatable("unregistered", "Answer 410 Unregistered for TOKEN[:timestamp-ms] (repeatable)."),
                .repeatable("bad-token", "Answer 400 BadDeviceToken for this token (repeatable)."),
                .repeatable("too-many-requests", "Answer 429 TooManyRequests for this token (repeatable)."),
                .option("error-rate", "Fraction of requests answered with --error-status.", default: defaultText(0.0)),
                .option("error-status", "500 or 503.", default: defaultText(500)),
                .option("goaway-after", "Send GOAWAY after this many streams per connection."),
                .option("delay-ms", "Delay every response by this many milliseconds.", default: defaultText(0)),
                .flag("quiet", "Do not log accepted notifications (one stderr line each by default)."),
                .option("bench-connect", "Bench client: simulator HOST:PORT to load."),
                .option("bench-ca", "Bench client: CA file to trust."),
                .option("bench-p8", "Bench client: .p8 key file."),
                .option("bench-count", "Bench client: notifications to send.", default: defaultText(100_000)),
                .option("bench-connections", "Bench client: pool connections.", default: defaultText(1)),
                .option("bench-concurrency", "Bench client: requests in flight.", default: defaultText(1000)),
            ])
    }

    var host: String
    var port: Int
    var cert: String?
    var key: String?
    var caOut: String?
    var keyID: String?
    var teamID: String?
    var publicKey: String?
    var topics: String?
    var allowMissingToken: Bool
    var maxStreams: Int
    var unregistered: [String]
    var badTokens: [String]
    var tooManyRequests: [String]
    var errorRate: Double
    var errorStatus: Int
    var goAwayAfter: Int?
    var delayMilliseconds: Int
    var quiet: Bool
    var benchConnect: String?
    var benchCA: String?
    var benchKey: String?
    var benchCount: Int
    var benchConnections: Int
    var benchConcurrency: Int

    init(_ parsed: ParsedOptions) throws(ValidationError) {
        host = parsed.string("host") ?? "127.0.0.1"
        port = try parsed.int("port") ?? 0
        cert = parsed.string("cert")
        key = parsed.string("key")
        caOut = parsed.string("ca-out")
        keyID = parsed.string("key-id")
        teamID = parsed.string("team-id")
        publicKey = parsed.string("public-key")
        topics = parsed.string("topics")
        allowMissingToken = parsed.flag("allow-missing-token")
        maxStreams = try parsed.int("max-streams") ?? 1000
        unregistered = parsed.strings("unregistered") ?? []
        badTokens = parsed.strings("bad-token") ?? []
        tooManyRequests = parsed.strings("too-many-requests") ?? []
        errorRate = try parsed.double("error-rate") ?? 0.0
        errorStatus = try parsed.int("error-status") ?? 500
        goAwayAfter = try parsed.int("goaway-after")
        delayMilliseconds = try parsed.int("delay-ms") ?? 0
        quiet = parsed.flag("quiet")
        benchConnect = parsed.string("bench-connect")
        benchCA = parsed.string("bench-ca")
        benchKey = parsed.string("bench-p8")
        benchCount = try parsed.int("bench-count") ?? 100_000
        benchConnections = try parsed.int("bench-connections") ?? 1
        benchConcurrency = try parsed.int("bench-concurrency") ?? 1000
    }

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
            faults.unregistered[String(parts[0])] = timestamp ?? epochMilliseconds()
        }
        faults.badTokens = Set(badTokens)
        for token in tooManyRequests { faults.tooManyRequests[token] = -1 }
        faults.serverErrorRate = errorRate
        faults.serverErrorStatus = errorStatus
        faults.goAwayAfterStreams = goAwayAfter
        faults.responseDelay = .milliseconds(delayMilliseconds)
        configuration.faults = faults

        let simulator = try await APNsSimulator.start(configuration)
        if let caOut {
            try POSIXFile.writeAtomically(caOut, bytes: Array(simulator.caCertificatePEM.utf8))
        }
        if !quiet {
            let deliveries = simulator.deliveryStream()
            Task.detached {
                for await delivery in deliveries {
                    let line = "delivered apns-id=\(delivery.apnsID) token=\(delivery.deviceToken.prefix(8))… "
                        + "topic=\(delivery.header("apns-topic") ?? "-") type=\(delivery.header("apns-push-type") ?? "-") "
                        + "bytes=\(delivery.payload.count) connection=\(delivery.connectionID)\n"
                    writeUnbuffered(line, to: 2)
                }
            }
        }
        // Unbuffered: scripts wait for this line on a pipe.
        writeUnbuffered("listening on \(simulator.host):\(simulator.port)\n", to: 1)
        await Self.waitForTerminationSignal()
        try await simulator.stop()
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
