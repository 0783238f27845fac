/// The life of one pool slot, as a value: which connection accepts its
/// streams (connecting or ready), whether it waits to reconnect, how many
/// connects failed in a row, and shutdown. The slot feeds it events and
/// carries out the actions it returns. An event that cannot happen in the
/// current state fails loudly in debug builds (`assertionFailure`).
///
/// Generic over the connection so the table-style tests need no sockets.
struct HTTP2SlotStateMachine<Connection: AnyObject> {
    enum State {
        /// No accepting connection; the next request opens one.
        case idle(failures: Int)
        /// `connection` is being established (its SETTINGS not seen yet).
        case connecting(Connection, failures: Int)
        /// `connection` takes streams.
        case ready(Connection)
        /// Connects failed `failures` times in a row: waiting out the reconnect backoff.
        case backingOff(failures: Int)
        /// Shut down: everything fails with `.shutdown`.
        case shutdown
    }

    private(set) var state: State = .idle(failures: 0)

    /// The connection that accepts streams (connecting or ready).
    var accepting: Connection? {
        switch state {
        case .connecting(let connection, _), .ready(let connection): connection
        case .idle, .backingOff, .shutdown: nil
        }
    }

    var isShutdown: Bool { if case .shutdown = state { true } else { false } }
    var isBackingOff: Bool { if case .backingOff = state { true } else { false } }

    /// What the slot does after ``pump()``.
    enum PumpAction {
        /// Start queued requests on this ready connection.
        case start(Connection)
        /// Open a connection (then call ``connecting(_:)``).
        case connect
        /// Nothing to do now (connecting, backing off or shut down).
        case wait
    }

    /// Requests are queued (`hasQueued`) or capacity changed: what now?
    func pump(hasQueued: Bool) -> PumpAction {
        switch state {
        case .ready(let connection): .start(connection)
        case .idle: hasQueued ? .connect : .wait
        case .connecting, .backingOff, .shutdown: .wait
        }
    }

    /// The slot opened `connection` after ``PumpAction/connect``.
    mutating func connecting(_ connection: Connection) {
        guard case .idle(let failures) = state else {
            assertionFailure("connect while \(state)")
            return
        }
        state = .connecting(connection, failures: failures)
    }

    /// `connection` got the peer's SETTINGS. True: pump.
    mutating func ready(_ connection: Connection) -> Bool {
        switch state {
        case .connecting(let current, _) where current === connection:
            state = .ready(connection)
            return true
        case .ready(let current) where current === connection:
            assertionFailure("connection ready twice")
            return false
        default:
            return false  // a connection the slot already let go of
        }
    }

    /// `connection` stopped taking streams (GOAWAY, idle, retired). True: it
    /// was the accepting one; keep it draining and pump (a new one opens).
    mutating func stoppedAccepting(_ connection: Connection) -> Bool {
        switch state {
        case .connecting(let current, let failures) where current === connection:
            state = .idle(failures: failures)
            return true
        case .ready(let current) where current === connection:
            state = .idle(failures: 0)
            return true
        default:
            return false
        }
    }

    /// What the slot does after a connection closed.
    enum ClosedAction: Equatable, Sendable {
        /// Not the accepting connection (draining or let go of): nothing more.
        case none
        /// A working connection went away: pump (reopen at once if there is work).
        case pump
        /// It never got ready: fail the queue with the error, stay idle (not retryable).
        case failQueue
        /// It never got ready: fail the queue and wait `failures` worth of reconnect backoff.
        case failQueueAndBackOff(failures: Int)
    }

    /// The accepting (or another) `connection` closed; `retryable` false for a
    /// connect failure that retrying cannot fix.
    mutating func closed(_ connection: Connection, wasReady: Bool, retryable: Bool) -> ClosedAction {
        let failures: Int
        switch state {
        case .connecting(let current, let count) where current === connection:
            failures = count
        case .ready(let current) where current === connection:
            failures = 0
        default:
            return .none
        }
        if wasReady {
            state = .idle(failures: failures)
            return .pump
        }
        if !retryable {
            state = .idle(failures: failures + 1)
            return .failQueue
        }
        state = .backingOff(failures: failures + 1)
        return .failQueueAndBackOff(failures: failures + 1)
    }

    /// The reconnect backoff ran out. True: pump.
    mutating func reconnectTimerFired() -> Bool {
        switch state {
        case .backingOff(let failures):
            state = .idle(failures: failures)
            return true
        case .shutdown:
            return false  // cancelled too late; nothing to do
        case .idle, .connecting, .ready:
            assertionFailure("reconnect timer fired while \(state)")
            return false
        }
    }

    /// Shut down; returns the accepting connection to close (if any).
    mutating func shutdown() -> Connection? {
        let connection = accepting
        state = .shutdown
        return connection
    }
}
