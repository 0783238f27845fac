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
        usage: "herald apns-sim [--<setting> <value>]...",
        discussion: """
            Prints `listening on HOST:PORT` once ready. Without --cert/--key a self-signed
            certificate is generated; --ca-out writes it (the CA clients must trust).
            Without --public-key, JWT signatures are not checked.
            With --bench-connect it instead runs a load client against a simulator.

            """ + SettingsReference.help(Settings.table)
    )

    /// The settings' flags, read by `Settings.table` (APNsSimSettings.swift).
    @Argument(parsing: .allUnrecognized, help: .hidden)
    var arguments: [String] = []

    func run() async throws {
        typealias S = Settings
        let settings = try SettingValues(flags: arguments, table: S.table)
        if let target = settings.given(S.benchConnect) {
            try await APNsBench(
                target: target, caFile: settings.given(S.benchCA), keyFile: settings.given(S.benchKey),
                keyID: settings.given(S.keyID) ?? "BENCHKEY1", teamID: settings.given(S.teamID) ?? "BENCHTEAM1",
                count: settings[S.benchCount], connections: settings[S.benchConnections],
                concurrency: settings[S.benchConcurrency]
            ).run()
            return
        }
        var configuration = APNsSimulatorConfiguration()
        configuration.host = settings[S.host]
        configuration.port = settings[S.port]
        if let cert = settings.given(S.cert), let key = settings.given(S.key) {
            configuration.certificatePEM = try POSIXFile.readText(cert)
            configuration.keyPEM = try POSIXFile.readText(key)
        } else if settings.given(S.cert) != nil || settings.given(S.key) != nil {
            throw ValidationError("--cert and --key go together")
        }
        configuration.keyID = settings.given(S.keyID)
        configuration.teamID = settings.given(S.teamID)
        if let publicKey = settings.given(S.publicKey) { configuration.publicKeyPEM = try POSIXFile.readText(publicKey) }
        if let topics = settings.given(S.topics) {
            configuration.allowedTopics = Set(topics.split(separator: ",").map { $0.trimmingSpaces() })
        }
        configuration.allowMissingProviderToken = settings[S.allowMissingToken]
        configuration.maxConcurrentStreams = settings[S.maxStreams]
        configuration.recordDeliveries = false  // nobody can read them from outside the process
        var faults = APNsSimulatorFaults()
        for entry in settings[S.unregistered] {
            let parts = entry.split(separator: ":", maxSplits: 1)
            let timestamp = parts.count > 1 ? Int64(parts[1]) : nil
            faults.unregistered[String(parts[0])] = timestamp ?? Timestamp.nowMilliseconds()
        }
        faults.badTokens = Set(settings[S.badTokens])
        for token in settings[S.tooManyRequests] { faults.tooManyRequests[token] = -1 }
        faults.serverErrorRate = settings[S.errorRate]
        faults.serverErrorStatus = settings[S.errorStatus]
        faults.goAwayAfterStreams = settings[S.goAwayAfter]
        faults.responseDelay = .milliseconds(settings[S.delayMilliseconds])
        faults.hang = Set(settings[S.hang])
        configuration.faults = faults

        let simulator = try await APNsSimulator.start(configuration)
        if let caOut = settings.given(S.caOut) {
            try POSIXFile.writeAtomically(caOut, bytes: Array(simulator.caCertificatePEM.utf8), mode: 0o644)
        }
        // Child tasks, not detached ones: both end when the simulator stops
        // (its delivery streams finish), and the group awaits them, so every
        // accepted notification is logged and recorded before exit.
        try await withThrowingDiscardingTaskGroup { group in
            if !settings[S.quiet] {
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
            if let record = settings.given(S.record) {
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
