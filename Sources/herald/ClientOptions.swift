import ArgumentParser
import GRPCEngine
import HeraldClient

/// The flags every client subcommand shares: where the server is, TLS, the
/// token, the output form. The token is never a flag (`ps` would show it).
struct ClientOptions: ParsableArguments {
    @Option(name: .customLong("addr"), help: ArgumentHelp(
        "host:port of the Herald gRPC port (default: HERALD_ADDRESS, else \(ClientTarget.defaultAddress)).",
        valueName: "host:port"))
    var address: String?

    @Flag(help: "Speak TLS (the server's --tls-cert); implied by --ca-file and --client-cert.")
    var tls = false

    @Option(name: .customLong("ca-file"), help: ArgumentHelp("PEM file of the CA(s) that issued the server's certificate (default: the system's CAs).", valueName: "file"))
    var caFile: String?

    @Option(name: .customLong("client-cert"), help: ArgumentHelp("mTLS: PEM client certificate (the server's --tls-client-ca issued it).", valueName: "file"))
    var clientCertificate: String?

    @Option(name: .customLong("client-key"), help: ArgumentHelp("mTLS: the PEM private key of --client-cert.", valueName: "file"))
    var clientKey: String?

    @Option(name: .customLong("server-name"), help: ArgumentHelp("TLS: the name the server's certificate must match (default: the host of --addr).", valueName: "name"))
    var serverName: String?

    @Option(name: .customLong("token-file"), help: ArgumentHelp("A file holding the API token (default: HERALD_TOKEN); sent as `authorization: Token …`.", valueName: "file"))
    var tokenFile: String?

    @Flag(help: "Print the reply as JSON (proto3 JSON mapping; `events`: one object a line).")
    var json = false

    @Option(help: ArgumentHelp("Give up on a call after this many seconds (DEADLINE_EXCEEDED).", valueName: "seconds"))
    var timeout: Double = 30

    func validate() throws {
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be more than 0 and at most 86400 seconds") }
    }

    /// The target these flags name.
    func target() throws(ClientFailure) -> ClientTarget {
        let text = address ?? environmentValue("HERALD_ADDRESS").flatMap { $0.isEmpty ? nil : $0 } ?? ClientTarget.defaultAddress
        let (host, port) = try ClientTarget.parse(text)
        let usesTLS = tls || caFile != nil || clientCertificate != nil || clientKey != nil || serverName != nil
        let clientTLS = usesTLS ? ClientTLS(caFile: caFile, clientCertificateFile: clientCertificate, clientKeyFile: clientKey, serverName: serverName) : nil
        return ClientTarget(host: host, port: port, tls: clientTLS)
    }

    /// The token from --token-file, else HERALD_TOKEN; nil when neither.
    func token() throws(ClientFailure) -> String? {
        if let tokenFile {
            return try ClientInput.token(GRPCClient.readText(tokenFile, what: "--token-file"), source: "--token-file \(tokenFile)")
        }
        guard let value = environmentValue("HERALD_TOKEN"), !value.isEmpty else { return nil }
        return try ClientInput.token(value, source: "HERALD_TOKEN")
    }

    /// Connects, runs `body`, and turns every failure into one line on
    /// stderr and the exit status of ``ExitStatus``.
    func run(_ body: (ClientSession) async throws -> Void) async throws {
        do {
            let target = try target()
            let token = try token()
            let deadline = Duration.milliseconds(Int64(timeout * 1000))
            let client = try await GRPCClient.connect(to: target, timeout: min(.seconds(10), deadline))
            let session = ClientSession(client: client, token: token, json: json, timeout: deadline)
            do {
                try await body(session)
            } catch {
                await client.close()
                throw error
            }
            await client.close()
        } catch let failure as ClientFailure {
            throw report(failure)
        } catch let status as GRPCStatus {
            throw report(explain(status))
        }
    }

    /// A server's status in words, with what to do where it is clear.
    func explain(_ status: GRPCStatus) -> ClientFailure {
        let detail = status.message.isEmpty ? "" : ": \(status.message)"
        switch status.code {
        case .unauthenticated:
            let given = (try? token()) == nil
                ? "no token was given: set HERALD_TOKEN or pass --token-file FILE"
                : "check the token in \(tokenFile.map { "--token-file \($0)" } ?? "HERALD_TOKEN")"
            return ClientFailure(.unauthenticated, "the server refused the call: UNAUTHENTICATED\(detail) (\(given))")
        case .permissionDenied:
            return ClientFailure(.permissionDenied, "the token may not do this: PERMISSION_DENIED\(detail) (the server's --tokens-file lists the bundles each token allows)")
        case .deadlineExceeded:
            return ClientFailure(.deadlineExceeded, "no answer in time: DEADLINE_EXCEEDED\(detail) (--timeout \(timeout))")
        default:
            return ClientFailure(status.code, "\(status.code.name)\(detail)")
        }
    }

    private func report(_ failure: ClientFailure) -> ExitCode {
        writeUnbuffered("herald: error: \(failure.message)\n", to: 2)
        return ExitCode(failure.exitCode)
    }
}
