/// A state change the life cycle does not allow.
public struct StateTransitionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The current state.
    public var from: MessageState
    /// The refused target state.
    public var to: MessageState

    /// Creates the error.
    public init(from: MessageState, to: MessageState) {
        self.from = from
        self.to = to
    }

    /// True when the message is already in the target state (e.g. a second
    /// Cancel): callers answering idempotent requests can treat it as success.
    public var isNoOp: Bool { from == to }

    public var description: String {
        isNoOp ? "message is already \(to.rawValue)" : "message cannot go from \(from.rawValue) to \(to.rawValue)"
    }
}

extension MessageState {
    /// Every allowed transition, in one table. The store enforces it: every
    /// state write goes through it (`StoreError.illegalTransition`).
    ///
    /// - `scheduled` → `handed_off` (context-aware handoff sent), `sent`
    ///   (alert accepted by APNs), `cancelled`, `superseded` (same key
    ///   rescheduled), `failed` (APNs rejected it for every device),
    ///   `expired` (the window or TTL ran out before it could go),
    ///   `no_devices` (the user had no enabled device when it was due).
    /// - `handed_off` → `displayed` (the app reported it shown), `sent` (the
    ///   alert fallback at window end), `cancelled` (sends a revoke push and
    ///   stops the fallback), `superseded` (allowed, but the SQLite store
    ///   never takes it: a handed-off message's key is spent, so a new
    ///   Schedule with it is ALREADY_EXISTS), `failed` (the fallback was
    ///   rejected), `expired`, `no_devices` (every device went away before
    ///   the fallback), `suppressed` (the delivery policy withheld the
    ///   fallback from every device).
    /// - `scheduled` → `suppressed` too: the delivery policy (SPEC §4b)
    ///   withheld every device's push.
    /// - `sent` → `displayed` (the app reported the alert opened/shown).
    /// - `displayed`, `cancelled`, `superseded`, `failed`, `expired`,
    ///   `no_devices` and `suppressed` are terminal.
    ///
    /// A sent message can no longer be cancelled or superseded: a key never
    /// causes a second delivery (Cancel answers `cancelled=false,
    /// state=SENT`; Schedule answers ALREADY_EXISTS).
    public static let allowedTransitions: [MessageState: Set<MessageState>] = [
        .scheduled: [.handedOff, .sent, .cancelled, .superseded, .failed, .expired, .noDevices, .suppressed],
        .handedOff: [.displayed, .sent, .cancelled, .superseded, .failed, .expired, .noDevices, .suppressed],
        .sent: [.displayed],
        .displayed: [],
        .cancelled: [],
        .superseded: [],
        .failed: [],
        .expired: [],
        .noDevices: [],
        .suppressed: [],
    ]

    /// Whether `self` → `next` is allowed.
    public func canTransition(to next: MessageState) -> Bool {
        Self.allowedTransitions[self]?.contains(next) ?? false
    }

    /// Moves to `next`, or throws when the table does not allow it (also for
    /// `next == self`; see ``StateTransitionError/isNoOp``).
    public mutating func transition(to next: MessageState) throws(StateTransitionError) {
        guard canTransition(to: next) else { throw StateTransitionError(from: self, to: next) }
        self = next
    }

    /// No transition leaves this state.
    public var isTerminal: Bool { Self.allowedTransitions[self]?.isEmpty ?? true }

    /// Whether an alert has been, or may still be, shown: cancelling or
    /// superseding is refused from here (SENT, DISPLAYED).
    public var isDelivered: Bool { self == .sent || self == .displayed }

    /// Whether a new Schedule with the same key may replace this message
    /// (it is not yet sent, and not finished).
    public var isReplaceable: Bool { canTransition(to: .superseded) }

    /// Whether Cancel applies (SCHEDULED or HANDED_OFF).
    public var isCancellable: Bool { canTransition(to: .cancelled) }
}
