#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HeraldPrimitives

/// The one result line of the bench clients (`apns-sim --bench-connect`,
/// `fcm-sim --bench-connect`): the same fields in the same order, so
/// bench/apns.sh and bench/fcm.sh parse both.
enum BenchReport {
    /// Sends `count` messages from `concurrency` workers (each awaits its
    /// answer before the next send); `send(n)` sends message n (any order)
    /// and says whether it was accepted. Returns the failures and the time taken.
    static func drive(
        count: Int, concurrency: Int, _ send: @escaping @Sendable (Int) async throws -> Bool
    ) async throws -> (failed: Int, elapsed: Duration) {
        let workers = max(1, min(concurrency, count))
        let started = ContinuousClock.now
        let failed = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<workers {
                let share = count / workers + (worker < count % workers ? 1 : 0)
                group.addTask {
                    var failed = 0
                    for index in 0..<share where try await !send(worker + index * workers) { failed += 1 }
                    return failed
                }
            }
            var total = 0
            for try await failed in group { total += failed }
            return total
        }
        return (failed, ContinuousClock.now - started)
    }

    /// Prints `connections=… concurrency=… sent=… failed=… seconds=… rate=…/s
    /// client_cpu_user=… client_cpu_sys=… client_peak_rss=…MiB` with this
    /// process's CPU time and peak RSS (getrusage).
    static func print(connections: Int, concurrency: Int, sent: Int, failed: Int, elapsed: Duration) {
        let seconds = elapsed.timeInterval
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        Swift.print(cFormat(
            "connections=%ld concurrency=%ld sent=%ld failed=%ld seconds=%.3f rate=%.0f/s client_cpu_user=%.2fs client_cpu_sys=%.2fs client_peak_rss=%.1fMiB",
            connections, concurrency, sent, failed, seconds, Double(sent) / seconds, user, system,
            Double(usage.ru_maxrss) / 1024))
    }
}
