import HeraldPrimitives

/// The life of one client connection, as a value: the connection feeds it
/// events and carries out what it returns. An event that cannot happen in
/// the current state fails loudly in debug builds (`assertionFailure`) and
/// is ignored in release builds.
struct HTTP2ConnectionStateMachine: Sendable, Equatable {
    /// Keep-alive bookkeeping of an established connection.
    struct Liveness: Sendable, Equatable {
        /// A PING went out and its ACK has not come back.
        var pingOutstanding = false
    }

    enum State: Sendable, Equatable {
        /// TCP/TLS/HTTP/2 preface under way; the peer's SETTINGS not seen yet.
        case connecting
        /// Takes new streams.
        case ready(Liveness)
        /// GOAWAY received or sent (or retired): finishes its streams, takes no new ones.
        case draining(Liveness)
        /// The channel is gone.
        case closed
    }

    private(set) var state: State = .connecting

    /// Takes new streams now.
    var isReady: Bool { if case .ready = state { true } else { false } }
    /// Established and not closed (ready or draining).
    var isOpen: Bool {
        switch state {
        case .ready, .draining: true
        case .connecting, .closed: false
        }
    }
    var isClosed: Bool { state == .closed }
    var isConnecting: Bool { state == .connecting }

    /// The peer's SETTINGS arrived. True the first time: streams may start,
    /// tell the slot. Later SETTINGS frames change nothing.
    mutating func settingsReceived() -> Bool {
        guard state == .connecting else { return false }
        state = .ready(Liveness())
        return true
    }

    /// GOAWAY received, or we retire the connection. True when it was
    /// accepting streams: tell the slot it no longer does.
    mutating func stopAccepting() -> Bool {
        switch state {
        case .connecting:
            state = .draining(Liveness())
            return true
        case .ready(let liveness):
            state = .draining(liveness)
            return true
        case .draining, .closed:
            return false
        }
    }

    /// What a keep-alive tick must do.
    enum KeepAliveAction: Sendable, Equatable {
        /// Not established (or gone): arm no further ticks.
        case stop
        /// Arm the next tick and do nothing else.
        case none
        /// No streams for the idle timeout: retire (the next tick is armed).
        case retireIdle
        /// The last PING got no ACK for a whole interval: close.
        case closeUnanswered
        /// Quiet for a whole interval: send a PING (now outstanding).
        case ping
    }

    /// One keep-alive tick at `now`.
    mutating func keepAliveTick(
        now: Timestamp, lastActivity: Timestamp, lastStreamActivity: Timestamp, hasStreams: Bool,
        pingInterval: Duration, idleTimeout: Duration?
    ) -> KeepAliveAction {
        let liveness: Liveness
        switch state {
        case .ready(let current), .draining(let current): liveness = current
        case .connecting, .closed: return .stop
        }
        if let idleTimeout, !hasStreams, now.timeIntervalSince(lastStreamActivity) >= idleTimeout.timeInterval {
            return .retireIdle
        }
        if liveness.pingOutstanding { return .closeUnanswered }
        guard now.timeIntervalSince(lastActivity) >= pingInterval.timeInterval else { return .none }
        setPingOutstanding(true)
        return .ping
    }

    /// The peer acknowledged our PING.
    mutating func pingAcknowledged() {
        switch state {
        case .ready, .draining: setPingOutstanding(false)
        case .connecting, .closed: break  // an ACK for nothing we sent: nghttp2 already checked the frame
        }
    }

    private mutating func setPingOutstanding(_ outstanding: Bool) {
        switch state {
        case .ready(var liveness):
            liveness.pingOutstanding = outstanding
            state = .ready(liveness)
        case .draining(var liveness):
            liveness.pingOutstanding = outstanding
            state = .draining(liveness)
        case .connecting, .closed:
            assertionFailure("PING bookkeeping on a connection that is \(state)")
        }
    }

    /// The channel is gone. Returns whether it had been established (`wasReady`;
    /// nil when it was already closed: report nothing twice).
    mutating func closed() -> Bool? {
        switch state {
        case .closed: return nil
        case .connecting:
            state = .closed
            return false
        case .ready, .draining:
            state = .closed
            return true
        }
    }
}
