import FCM
import HeraldPrimitives
import Logging

/// The load client behind `herald fcm-sim --bench-connect HOST:PORT`: sends
/// messages through ``FCMClient`` (OAuth token from the simulator's token
/// endpoint, HTTP/2 pool, error mapping) with a fixed number in flight and
/// prints the same line as ``APNsBench``: rate, CPU time and peak RSS of
/// this process.
struct FCMBench {
    var target: String
    var caFile: String?
    var serviceAccountFile: String?
    var tokenURL: String?
    var count: Int
    var connections: Int
    var concurrency: Int

    func run() async throws {
        let parts = target.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]) else { throw BenchError("--bench-connect HOST:PORT") }
        guard let serviceAccountFile else { throw BenchError("--bench-service-account is required") }
        let account = try FCMServiceAccount.parse(json: Array(try POSIXFile.readText(serviceAccountFile).utf8))
        var configuration = FCMClientConfiguration(
            serviceAccount: account, endpoint: FCMEndpoint(host: String(parts[0]), port: port), tokenURL: tokenURL,
            caFile: caFile, maxConnections: connections,
            // The bench measures the client, not the per-project quota bucket.
            ratePerMinute: 100_000_000)
        configuration.maxConcurrentStreamsPerConnection = max(configuration.maxConcurrentStreamsPerConnection, concurrency)
        let client = try FCMClient(configuration: configuration, logger: Logger(label: "herald.fcm-bench"))
        // What Herald renders for an Android alert, 64 distinct registration tokens.
        let bodies = (0..<64).map { index in
            let token = cFormat("bench%02d:APA91b", Int32(index)) + String(repeating: "K3a_9-Zq", count: 18)
            return Array((#"{"message":{"token":"\#(token)","notification":{"title":"Bench","body":"Hello from herald"},"#
                + #""android":{"priority":"HIGH","notification":{"sound":"default"}},"data":{"ctx_idempotency_key":"bench"}}}"#).utf8)
        }
        let project = account.projectID

        // Warm up: the access token and the first connection.
        _ = try await client.send(FCMRequest(projectID: project, deviceToken: "bench", body: bodies[0]))

        let workers = max(1, min(concurrency, count))
        let (failures, elapsed) = try await BenchReport.drive(count: count, concurrency: workers) { index in
            try await client.send(FCMRequest(projectID: project, deviceToken: "bench", body: bodies[index % bodies.count])).isSuccess
        }
        await client.shutdown()
        BenchReport.print(connections: connections, concurrency: workers, sent: count, failed: failures, elapsed: elapsed)
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
