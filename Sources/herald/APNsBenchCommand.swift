import APNs
import HeraldPrimitives
import HeraldService
import HeraldStorage

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
        let started = ContinuousClock.now
        let failures = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<workers {
                let share = count / workers + (worker < count % workers ? 1 : 0)
                group.addTask {
                    var failed = 0
                    for index in 0..<share {
                        let response = try await client.send(request(tokens[(worker + index) % tokens.count], payload))
                        if response.status != 200 { failed += 1 }
                    }
                    return failed
                }
            }
            var total = 0
            for try await failed in group { total += failed }
            return total
        }
        let elapsed = (ContinuousClock.now - started)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        await client.shutdown()
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        print(cFormat(
            "connections=%ld concurrency=%ld sent=%ld failed=%ld seconds=%.3f rate=%.0f/s client_cpu_user=%.2fs client_cpu_sys=%.2fs client_peak_rss=%.1fMiB",
            connections, workers, count, failures, seconds, Double(count) / seconds, user, system,
            Double(usage.ru_maxrss) / 1024))
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
