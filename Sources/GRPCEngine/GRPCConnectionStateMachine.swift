/// The connection's life: active → draining (GOAWAY 2^31-1 + PING) → final
/// GOAWAY sent → closing → closed. A struct whose methods return what the
/// handler must do; no I/O, so it is tested without sockets.
struct GRPCConnectionStateMachine: Sendable {
    enum State: Sendable, Equatable {
        /// Serving.
        case active
        /// Shutdown notice and a PING carrying `pingPayload` sent; waiting for the ack.
        case draining(pingPayload: UInt64)
        /// The final GOAWAY named the last stream; open streams finish.
        case goawaySent
        /// Flushing what is queued, then closing the channel.
        case closing
        /// The channel is gone.
        case closed
    }

    enum Action: Sendable, Equatable {
        case none
        /// GOAWAY(2^31-1) and PING(payload); arm the drain timer.
        case sendShutdownNoticeAndPing(payload: UInt64)
        /// GOAWAY with the last processed stream.
        case sendFinalGoaway
    }

    private(set) var state: State = .active

    /// Reading frames and starting calls is allowed.
    var acceptsInput: Bool {
        switch state {
        case .active, .draining, .goawaySent: true
        case .closing, .closed: false
        }
    }

    /// nghttp2 may end an idle session: not while the drain PING is out, or a
    /// request the peer sent before it saw the first GOAWAY would be lost.
    var mayCloseWhenSessionIsDone: Bool {
        if case .draining = state { return false }
        return true
    }

    /// The channel should close once the output is flushed.
    var isClosing: Bool { state == .closing || state == .closed }

    /// Graceful shutdown begins (server draining). `payload` identifies our PING.
    mutating func beginGracefulShutdown(pingPayload payload: UInt64) -> Action {
        guard state == .active else { return .none }
        state = .draining(pingPayload: payload)
        return .sendShutdownNoticeAndPing(payload: payload)
    }

    /// A PING ack: the final GOAWAY once the peer acked our drain PING (any other ack is keepalive).
    mutating func pingAcked(payload: UInt64) -> Action {
        guard case .draining(let expected) = state, expected == payload else { return .none }
        state = .goawaySent
        return .sendFinalGoaway
    }

    /// The PING ack did not come in time (some peers stop reading after the first GOAWAY).
    mutating func drainPingTimedOut() -> Action {
        guard case .draining = state else { return .none }
        state = .goawaySent
        return .sendFinalGoaway
    }

    /// The drain PING could not be submitted: go straight to the final GOAWAY.
    mutating func drainPingFailed() -> Action { drainPingTimedOut() }

    /// A protocol error, idle GOAWAY or liveness failure: flush and close.
    mutating func close() {
        if state != .closed { state = .closing }
    }

    /// The channel closed.
    mutating func closed() {
        state = .closed
    }
}
