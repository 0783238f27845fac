import HeraldStorage
import PostgresNIO
import Synchronization

/// Fails a connection's work when the connection closes under it.
///
/// postgres-nio 1.33 can leave a query on a connection the server closed
/// (a terminated backend, a restart) waiting forever: it writes the query to
/// the dead channel without a promise (vapor/postgres-nio#487, fixed and
/// reverted in #501). `run(_:on:_:)` races the work with the connection's
/// close: the close wins with `StoreError.database`, so the call ends and
/// the pool discards the connection; the stranded work is left behind,
/// holding only its own memory (cancelled, in case it ever wakes).
///
/// One close callback per connection, not per use: `closeFuture` keeps its
/// callbacks until it completes, so a callback per query would grow without
/// bound on a long-lived connection.
///
/// A connection the call found dead never goes back to the pool alive in
/// the pool's eyes: `run` waits for its close (which the pool hears of
/// first) before it returns. The server's FATAL answer (a terminated
/// backend) arrives before its end of the socket, and the pool hears of a
/// close on the event loop while the caller goes on on another thread: the
/// connection went back idle, the next call was handed it and failed.
final class ClosedConnectionWatch: Sendable {
    /// The connection was closed before the call began: nothing was sent
    /// on it, so the call is safe to run again on another.
    struct ClosedBeforeUse: Error, CustomStringConvertible {
        var description: String { "the pooled PostgreSQL connection was closed before the call began" }
    }

    private struct Entry {
        var waiters: [UInt64: @Sendable () -> Void] = [:]
    }

    private struct State {
        var connections: [Int: Entry] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Runs `body` on `connection`; ends with an error as soon as the
    /// connection closes, whether or not `body` ever does.
    ///
    /// Throws `ClosedBeforeUse` (having waited for the close) when the
    /// connection is already closed: `body` does not run.
    func run<T: Sendable>(
        _ connection: PostgresConnection, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        guard !connection.isClosed else {
            await Self.closeAndWait(connection)
            throw ClosedBeforeUse()
        }
        do {
            return try await race(connection, body)
        } catch {
            if connection.isClosed || Self.endsTheConnection(error) { await Self.closeAndWait(connection) }
            throw error
        }
    }

    /// Whether `error` leaves the connection unusable: the connection
    /// failed, or the server ended the session (FATAL, PANIC).
    static func endsTheConnection(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown,
             .messageDecodingFailure, .unexpectedBackendMessage:
            return true
        case .server:
            let severity = error.serverInfo?[.severity]
            return severity == "FATAL" || severity == "PANIC"
        default:
            return false
        }
    }

    /// Closes `connection` (if it is not already) and returns once its close
    /// callbacks, the pool's among them, have run.
    static func closeAndWait(_ connection: PostgresConnection) async {
        let _: EventLoopFuture<Void> = connection.close()
        _ = try? await connection.closeFuture.get()
    }

    /// `body` raced with the connection's close.
    private func race<T: Sendable>(
        _ connection: PostgresConnection, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let work = Mutex<Task<Void, Never>?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let once = ResumeOnce(continuation)
                let (waiter, isNew) = add(connection.id) {
                    once.resume(throwing: StoreError.database("the PostgreSQL server closed the connection during the call"))
                    work.withLock { $0 }?.cancel()
                }
                if isNew {
                    connection.closeFuture.whenComplete { [self] _ in closed(connection.id) }
                }
                let task = Task {
                    let result: Result<T, any Error>
                    do { result = .success(try await body(connection)) } catch { result = .failure(error) }
                    once.resume(with: result)
                    self.remove(connection.id, waiter)
                }
                work.withLock { $0 = task }
            }
        } onCancel: {
            work.withLock { $0 }?.cancel()
        }
    }

    /// Registers a waiter; `isNew`: the connection has no close callback yet.
    private func add(_ id: Int, _ fail: @escaping @Sendable () -> Void) -> (UInt64, isNew: Bool) {
        state.withLock { state in
            let waiter = state.nextWaiter
            state.nextWaiter += 1
            let isNew = state.connections[id] == nil
            state.connections[id, default: Entry()].waiters[waiter] = fail
            return (waiter, isNew)
        }
    }

    private func remove(_ id: Int, _ waiter: UInt64) {
        state.withLock { _ = $0.connections[id]?.waiters.removeValue(forKey: waiter) }
    }

    private func closed(_ id: Int) {
        let waiters = state.withLock { $0.connections.removeValue(forKey: id)?.waiters.values.map { $0 } } ?? []
        for fail in waiters { fail() }
    }

    /// Connections with a close callback (tests: bounded by the pool).
    var watchedConnections: Int { state.withLock { $0.connections.count } }
}
