import NIOCore
import Testing

@testable import GRPCEngine

/// The connection's clock-driven rules, driven by hand: no timers, no sleeps.
@Suite("Connection liveness (handshake, idle, keepalive, receive timeouts)")
struct ConnectionLivenessTests {
    static let limits = GRPCConnectionLiveness.Limits(
        handshake: .seconds(10), idle: .seconds(300), keepaliveInterval: .seconds(60),
        keepaliveTimeout: .seconds(20), requestReceive: .seconds(30))
    static let start = NIODeadline.uptimeNanoseconds(1_000_000_000_000)

    @Test("a peer that never sends its preface and SETTINGS is closed at the handshake timeout")
    func handshakeTimeout() {
        var machine = GRPCConnectionLiveness(limits: Self.limits, now: Self.start)
        machine.peerSentBytes()  // bytes, but never a SETTINGS frame (a half preface)
        let early = machine.tick(now: Self.start + .seconds(9), oldestReceivingCall: nil)
        #expect(early.action == .none)
        #expect(early.next == Self.start + .seconds(10))
        #expect(machine.tick(now: Self.start + .seconds(10), oldestReceivingCall: nil).action == .closeHandshakeTimedOut)
    }

    @Test("after the handshake, the handshake deadline no longer applies")
    func handshakeDone() {
        var machine = GRPCConnectionLiveness(limits: Self.limits, now: Self.start)
        machine.handshakeCompleted()
        #expect(machine.isHandshakeComplete)
        machine.peerSentBytes()
        let tick = machine.tick(now: Self.start + .seconds(11), oldestReceivingCall: nil)
        #expect(tick.action == .none)
        #expect(tick.next == Self.start + .seconds(11) + .seconds(60))
    }

    @Test("no call open for the idle time: GOAWAY; an open call holds it off")
    func idle() {
        var machine = GRPCConnectionLiveness(limits: Self.limits, now: Self.start)
        machine.handshakeCompleted()
        _ = machine.callOpened(now: Self.start + .seconds(1))
        // A call that lasts (e.g. a long Schedule): never idle while it is open.
        for minute in 1...10 {
            machine.peerSentBytes()
            #expect(machine.tick(now: Self.start + .seconds(Int64(minute) * 60), oldestReceivingCall: nil).action != .goawayIdle)
        }
        let idleAt = machine.callClosed(now: Self.start + .seconds(601))
        #expect(idleAt == Self.start + .seconds(601) + .seconds(300))
        machine.peerSentBytes()
        #expect(machine.tick(now: Self.start + .seconds(899), oldestReceivingCall: nil).action == .none)
        machine.peerSentBytes()
        #expect(machine.tick(now: Self.start + .seconds(901), oldestReceivingCall: nil).action == .goawayIdle)
    }

    @Test("silence gets a PING; silence after the PING closes; an answer resets it")
    func keepalive() {
        var machine = GRPCConnectionLiveness(limits: Self.limits, now: Self.start)
        machine.handshakeCompleted()
        _ = machine.callOpened(now: Self.start)
        let ping = machine.tick(now: Self.start + .seconds(60), oldestReceivingCall: nil)
        #expect(ping.action == .sendPing)
        #expect(ping.next == Self.start + .seconds(80))
        // The ack (any bytes) arrives: alive, the next PING is an interval later.
        machine.peerSentBytes()
        let alive = machine.tick(now: Self.start + .seconds(70), oldestReceivingCall: nil)
        #expect(alive.action == .none)
        #expect(alive.next == Self.start + .seconds(130))
        #expect(machine.tick(now: Self.start + .seconds(130), oldestReceivingCall: nil).action == .sendPing)
        #expect(machine.tick(now: Self.start + .seconds(149), oldestReceivingCall: nil).action == .none)
        #expect(machine.tick(now: Self.start + .seconds(150), oldestReceivingCall: nil).action == .closeUnresponsive)
    }

    @Test("the oldest call still receiving sets the next tick (to expire it)")
    func receiveDeadline() {
        var machine = GRPCConnectionLiveness(limits: Self.limits, now: Self.start)
        machine.handshakeCompleted()
        let due = machine.callOpened(now: Self.start + .seconds(2))
        #expect(due == Self.start + .seconds(32))
        let tick = machine.tick(now: Self.start + .seconds(3), oldestReceivingCall: Self.start + .seconds(2))
        #expect(tick.next == Self.start + .seconds(32))
    }

    @Test("the next tick is never in the past, whatever the inputs (no busy loop)")
    func neverBusy() {
        var machine = GRPCConnectionLiveness(limits: Self.limits, now: Self.start)
        machine.handshakeCompleted()
        let now = Self.start + .seconds(5)
        let tick = machine.tick(now: now, oldestReceivingCall: Self.start - .seconds(100))
        #expect(tick.next > now)
    }
}

@Suite("grpc-message bound")
struct StatusMessageBoundTests {
    @Test("messages are cut at a character boundary and marked", arguments: [0, 1, 2, 3, 4, 5, 63, 64, 1024])
    func truncation(limit: Int) {
        let message = String(repeating: "é€😀x", count: 500)
        let cut = GRPCStatus.truncated(message, toUTF8Bytes: limit)
        #expect(cut.utf8.count <= max(limit, 3))
        #expect(cut.hasSuffix("…"))
        #expect(message.hasPrefix(String(cut.dropLast())))
    }

    @Test("short messages pass unchanged")
    func short() {
        #expect(GRPCStatus.truncated("unknown service", toUTF8Bytes: 64) == "unknown service")
    }
}
