import APNs
import HeraldPrimitives
import HeraldService
import HeraldStorage

/// The load client behind `herald apns-sim --bench-connect HOST:PORT`: sends
/// notifications through ``APNsClient`` with a fixed number in flight and
/// prints the rate, CPU time and peak RSS of this process.
struct APNsBench {
    var target: String
    var caFile: String?
    var keyFile: String?
    var keyID: String
    var teamID: String
    var count: Int
    var connections: Int
    var concurrency: Int

    func run() async throws {
        let parts = target.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]) else { throw APNsError.configuration("--bench-connect HOST:PORT") }
        guard let keyFile else { throw APNsError.configuration("--bench-p8 is required") }
        let keyPEM = try POSIXFile.readText(keyFile)
        var configuration = APNsClientConfiguration(
            endpoint: APNsEndpoint(host: String(parts[0]), port: port),
            credentials: .token(keyID: keyID, teamID: teamID, privateKeyPEM: keyPEM))
        configuration.trustedCAFile = caFile
        configuration.maxConnections = connections
        let client = try APNsClient(configuration: configuration)
        let payload = Array(#"{"aps":{"alert":{"title":"Bench","body":"Hello from herald"},"sound":"default"},"ctx_idempotency_key":"bench"}"#.utf8)
        let tokens = (0..<64).map { index in String(repeating: cFormat("%02x", Int32(index)), count: 32) }

        // Warm up: open the connections.
        _ = try await client.send(request(tokens[0], payload))

        let workers = max(1, min(concurrency, count))
        let (failures, elapsed) = try await BenchReport.drive(count: count, concurrency: workers) { index in
            try await client.send(request(tokens[index % tokens.count], payload)).status == 200
        }
        await client.shutdown()
        BenchReport.print(connections: connections, concurrency: workers, sent: count, failed: failures, elapsed: elapsed)
    }

    private func request(_ token: String, _ payload: [UInt8]) -> APNsRequest {
        APNsRequest(
            deviceToken: token,
            headers: [
                ("apns-push-type", "alert"), ("apns-topic", "com.example.bench"), ("apns-priority", "10"),
                ("apns-expiration", "0"), ("apns-id", UUIDv4.make()),
            ],
            payload: payload)
    }
}
