import Dispatch
import HeraldStorage
import Logging
import HeraldService

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The real RPC handlers, wired as `HeraldServer` wires them but with no
/// network: an SQLite store in a temporary directory (removed at exit), a
/// scheduler that is never started, no APNs route, and a fixed clock. The
/// fuzz inputs go through exactly the handler code the server runs.
final class ServiceHarness: Sendable {
    /// A fixed clock (2026-01-01T00:00:00Z): runs are reproducible.
    static let nowMilliseconds: Int64 = 1_767_225_600_000

    struct FixedClock: HeraldClock {
        func now() -> Int64 { ServiceHarness.nowMilliseconds }
        func sleep(until milliseconds: Int64) async throws { throw CancellationError() }
    }

    static let shared = ServiceHarness()

    /// Schedule's grace, the server's default.
    static let graceSeconds = HeraldConfiguration().graceSeconds

    /// The server's handlers (HeraldService's `OfflineHandlers` seam).
    let handlers: OfflineHandlers

    private init() {
        let logger = Logger(label: "herald-fuzz") { _ in SwiftLogNoOpLogHandler() }
        var options = SQLiteStore.Options()
        // No fsync per input: the store's durability is not under test.
        options.durability = .processCrash
        let store: SQLiteStore
        do {
            store = try SQLiteStore(path: Self.makeStoreDirectory() + "/herald.sqlite", options: options)
        } catch {
            fatalError("herald-fuzz: cannot open the store: \(error)")
        }
        handlers = OfflineHandlers(
            store: store, clock: FixedClock(), graceSeconds: Self.graceSeconds, logger: logger)
    }

    /// Runs an async handler to completion from libFuzzer's synchronous
    /// callback: its answer; thrown errors are the server's answers.
    @discardableResult
    static func wait(_ handler: @escaping @Sendable () async throws -> [UInt8]) throws -> [UInt8] {
        let box = ResultBox()
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                box.answer = try await handler()
            } catch {
                box.error = error
            }
            done.signal()
        }
        done.wait()
        if let error = box.error { throw error }
        return box.answer
    }

    /// Written by the task before it signals, read after the wait.
    private final class ResultBox: @unchecked Sendable {
        var error: (any Error)?
        var answer: [UInt8] = []
    }

    /// A fresh directory under $TMPDIR (or /tmp), removed with its files at exit.
    private static func makeStoreDirectory() -> String {
        let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array("\(base)/herald-fuzz-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { fatalError("herald-fuzz: mkdtemp failed") }
        storeDirectory = String(cString: made)
        atexit {
            guard let directory = storeDirectory else { return }
            for suffix in ["", "-wal", "-shm"] { unlink("\(directory)/herald.sqlite\(suffix)") }
            rmdir(directory)
        }
        return String(cString: made)
    }
}

/// For the `atexit` handler (a C function pointer cannot capture): set once
/// before the handler is registered.
nonisolated(unsafe) private var storeDirectory: String?
