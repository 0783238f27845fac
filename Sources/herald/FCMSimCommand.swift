import ArgumentParser
import FCMSimulation
import HeraldPrimitives
import Logging

/// `herald fcm-sim`: runs the local FCM simulator (messages:send and the
/// OAuth2 token endpoint) until SIGTERM or SIGINT.
struct FCMSimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcm-sim",
        abstract: "Run the local FCM HTTP v1 simulator with its OAuth2 token endpoint (HTTP/2 over TLS).",
        usage: "herald fcm-sim --account <spec> [--<setting> <value>]...",
        discussion: """
            Prints `listening on HOST:PORT` once ready, then `certificate PATH` (with --ca-out) and \
            `token-url URL`. The certificate is self-signed for 127.0.0.1 and localhost; --ca-out \
            writes it (the CA clients must trust).

            Each --account is one service account whose JWT assertions the token endpoint \
            verifies, e.g. --account "project=my-project email=sa@my-project.iam.gserviceaccount.com \
            kid=KEYID public-key=pub.pem".

            --fault KIND[:COUNT] answers the next COUNT (default 1) messages:send requests with a \
            fault, in the order given: quota[=SECONDS] (429), internal (500), unavailable[=SECONDS] \
            (503), bad-gateway (502 HTML), third-party-auth (401 THIRD_PARTY_AUTH_ERROR), \
            slow=MILLISECONDS, goaway, drop; invalid-grant applies to token requests instead. \
            Faults are set at start only (as for apns-sim).

            With --bench-connect it instead runs a load client against a simulator (as \
            `apns-sim --bench-connect`): --bench-service-account is a service-account JSON key \
            whose account the simulator knows, --bench-token-url the simulator's `token-url`.

            """ + SettingsReference.help(Settings.table)
    )

    /// The settings' flags, read by `Settings.table` (FCMSimSettings.swift).
    @Argument(parsing: .allUnrecognized, help: .hidden)
    var arguments: [String] = []

    func run() async throws {
        typealias S = Settings
        let settings = try SettingValues(flags: arguments, table: S.table)
        if let target = settings.given(S.benchConnect) {
            try await FCMBench(
                target: target, caFile: settings.given(S.benchCA), serviceAccountFile: settings.given(S.benchServiceAccount),
                tokenURL: settings.given(S.benchTokenURL), count: settings[S.benchCount],
                connections: settings[S.benchConnections], concurrency: settings[S.benchConcurrency]
            ).run()
            return
        }
        let accounts = settings[S.account]
        guard !accounts.isEmpty else { throw ValidationError("at least one --account is required") }
        let faults = try settings[S.fault].map(Self.parseFault)
        var configuration = FCMSimulatorConfiguration(accounts: try accounts.map(Self.parseAccount))
        let host = settings[S.host]
        configuration.host = host
        configuration.port = settings[S.port]
        configuration.accessTokenLifetime = .seconds(settings[S.tokenLifetimeSeconds])
        configuration.quotaPerMinute = settings[S.quotaPerMinute]
        configuration.recordTo = settings.given(S.record)
        configuration.maxConcurrentStreams = settings[S.maxStreams]
        configuration.keepAccepted = false  // nobody can read them from outside the process

        let simulator = try FCMSimulator(configuration: configuration, logger: Logger(label: "herald.fcm-sim"))
        for (kind, count) in faults { simulator.inject(kind, count: count) }
        for project in Set(configuration.accounts.map(\.projectID)) {
            for token in settings[S.unregistered] { simulator.setToken(token, project: project, state: .unregistered) }
            for token in settings[S.otherSender] { simulator.setToken(token, project: project, state: .otherSender) }
        }
        // Subscribed before `listening` is printed, so no accepted message is missed.
        let accepted: AsyncStream<FCMAcceptedMessage>? = settings[S.quiet] ? nil : simulator.acceptedStream()
        let port = try await simulator.start()
        let caOut = settings.given(S.caOut)
        if let caOut {
            try POSIXFile.writeAtomically(caOut, bytes: Array(simulator.certificatePEM.utf8), mode: 0o644)
        }
        // Unbuffered: scripts wait for the first line on a pipe.
        var lines = "listening on \(host):\(port)\n"
        if let caOut { lines += "certificate \(caOut)\n" }
        lines += "token-url \(simulator.tokenURL)\n"
        writeUnbuffered(lines, to: 1)
        // A child task, not a detached one: the stream ends at shutdown and
        // the group awaits it, so every accepted message is logged before exit.
        await withDiscardingTaskGroup { group in
            if let accepted {
                group.addTask {
                    for await message in accepted {
                        let target = message.topic.map { "topic=\($0)" } ?? message.condition.map { _ in "condition" }
                            ?? "token=\(message.token.prefix(8))…"
                        writeUnbuffered("delivered \(message.name) \(target) bytes=\(message.message.count)\n", to: 2)
                    }
                }
            }
            await APNsSimCommand.waitForTerminationSignal()
            await simulator.shutdown()
        }
    }

    /// `project=ID email=E kid=K public-key=FILE` (spaces or commas between fields).
    static func parseAccount(_ text: String) throws -> FCMSimulatedAccount {
        var fields: [String: String] = [:]
        for part in text.split(whereSeparator: { $0 == " " || $0 == "," }) {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { throw ValidationError("--account: \(part) is not NAME=VALUE") }
            fields[String(pair[0])] = String(pair[1])
        }
        for name in fields.keys where !["project", "email", "kid", "public-key"].contains(name) {
            throw ValidationError("--account: unknown field \(name)")
        }
        guard let project = fields["project"], let email = fields["email"], let kid = fields["kid"],
              let keyFile = fields["public-key"] else {
            throw ValidationError("--account needs project=, email=, kid= and public-key=")
        }
        return FCMSimulatedAccount(
            projectID: project, clientEmail: email, privateKeyID: kid, publicKeyPEM: try POSIXFile.readText(keyFile))
    }

    /// `KIND[=ARGUMENT][:COUNT]`.
    static func parseFault(_ text: String) throws -> (FCMFault, Int) {
        let parts = text.split(separator: ":", maxSplits: 1)
        guard let head = parts.first else { throw ValidationError("--fault: empty") }
        var count = 1
        if parts.count == 2 {
            guard let value = Int(parts[1]), value > 0 else { throw ValidationError("--fault \(text): COUNT must be a positive integer") }
            count = value
        }
        let kind = head.split(separator: "=", maxSplits: 1)
        let name = String(kind[0])
        var argument: Int?
        if kind.count == 2 {
            guard let value = Int(kind[1]), value >= 0 else { throw ValidationError("--fault \(text): the argument must be a number") }
            argument = value
        }
        let fault: FCMFault
        switch name {
        case "quota": fault = .quotaExceeded(retryAfterSeconds: argument)
        case "internal": fault = .internalError
        case "unavailable": fault = .unavailable(retryAfterSeconds: argument)
        case "bad-gateway": fault = .badGatewayHTML
        case "third-party-auth": fault = .thirdPartyAuthError
        case "slow":
            guard let argument else { throw ValidationError("--fault slow=MILLISECONDS needs the delay") }
            fault = .slow(.milliseconds(argument))
        case "goaway": fault = .goaway
        case "drop": fault = .dropConnection
        case "invalid-grant": fault = .invalidGrant
        default: throw ValidationError("--fault: unknown kind \(name)")
        }
        if argument != nil, !["quota", "unavailable", "slow"].contains(name) {
            throw ValidationError("--fault \(name) takes no argument")
        }
        return (fault, count)
    }
}
