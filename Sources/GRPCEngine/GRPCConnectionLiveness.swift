import NIOCore

/// The clock-driven part of a connection's life, as a state machine: the
/// connection reports events, and `tick` says what to do now and when to look
/// again. Pure: no timers, no I/O (the connection owns the one timer).
///
/// - Handshake: the client preface and first SETTINGS must arrive within
///   `handshake`, or the connection is closed (a peer that connects and says
///   nothing holds a descriptor for free otherwise).
/// - Idle: with no call open for `idle`, the connection gets GOAWAY.
/// - Keepalive: when nothing arrived for `keepaliveInterval`, a PING goes out;
///   when nothing (not even its ack) arrives within `keepaliveTimeout`, the
///   peer is gone and the connection is closed.
/// - Request receive time: `oldestReceivingCall` (from the connection's
///   streams) + `requestReceive` is folded into the next wake-up; the
///   connection expires those calls itself.
struct GRPCConnectionLiveness {
    struct Limits {
        var handshake: TimeAmount
        var idle: TimeAmount
        var keepaliveInterval: TimeAmount
        var keepaliveTimeout: TimeAmount
        var requestReceive: TimeAmount
    }

    enum Action: Equatable {
        case none
        /// No preface + SETTINGS in time: close without a word.
        case closeHandshakeTimedOut
        /// No call for the idle time: GOAWAY(NO_ERROR), then close.
        case goawayIdle
        /// Nothing heard for the keepalive interval: send a PING.
        case sendPing
        /// Nothing heard within the keepalive timeout after our PING.
        case closeUnresponsive
    }

    let limits: Limits
    private var handshakeDeadline: NIODeadline?
    private var openCalls = 0
    private var idleSince: NIODeadline?
    /// Set on every read; folded into `lastHeard` at the next tick, so reads
    /// cost a store, not a clock read.
    private var heardFromPeer = false
    private var lastHeard: NIODeadline
    private var pingSentAt: NIODeadline?

    init(limits: Limits, now: NIODeadline) {
        self.limits = limits
        handshakeDeadline = now + limits.handshake
        idleSince = now
        lastHeard = now
    }

    var isHandshakeComplete: Bool { handshakeDeadline == nil }

    mutating func peerSentBytes() { heardFromPeer = true }

    mutating func handshakeCompleted() { handshakeDeadline = nil }

    /// A call began receiving at `now`; returns the latest time the connection
    /// must look again (to expire it if its request never completes).
    mutating func callOpened(now: NIODeadline) -> NIODeadline {
        openCalls += 1
        idleSince = nil
        return now + limits.requestReceive
    }

    /// A call ended; returns the time to look again when the connection just
    /// turned idle, nil otherwise.
    mutating func callClosed(now: NIODeadline) -> NIODeadline? {
        openCalls -= 1
        guard openCalls == 0 else { return nil }
        idleSince = now
        return now + limits.idle
    }

    /// What to do at `now`, and when to tick next.
    mutating func tick(now: NIODeadline, oldestReceivingCall: NIODeadline?) -> (action: Action, next: NIODeadline) {
        if heardFromPeer {
            heardFromPeer = false
            lastHeard = now
            pingSentAt = nil
        }
        if let deadline = handshakeDeadline, now >= deadline {
            return (.closeHandshakeTimedOut, .distantFuture)
        }
        var action = Action.none
        if let sent = pingSentAt {
            if now >= sent + limits.keepaliveTimeout { return (.closeUnresponsive, .distantFuture) }
        } else if now >= lastHeard + limits.keepaliveInterval {
            pingSentAt = now
            action = .sendPing
        }
        if let idle = idleSince, now >= idle + limits.idle {
            return (.goawayIdle, .distantFuture)
        }
        var next = pingSentAt.map { $0 + limits.keepaliveTimeout } ?? lastHeard + limits.keepaliveInterval
        if let deadline = handshakeDeadline { next = min(next, deadline) }
        if let idle = idleSince { next = min(next, idle + limits.idle) }
        if let oldest = oldestReceivingCall { next = min(next, oldest + limits.requestReceive) }
        // Never a busy loop, whatever the limits.
        return (action, max(next, now + .milliseconds(1)))
    }
}
