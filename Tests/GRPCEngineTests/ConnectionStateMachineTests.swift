import Testing

@testable import GRPCEngine

/// Graceful shutdown as a state machine: no sockets, no timers.
@Suite("Connection state machine (drain: GOAWAY, PING, final GOAWAY)")
struct ConnectionStateMachineTests {
    @Test("draining sends the shutdown notice with a PING, and the final GOAWAY on that PING's ack")
    func drainOnAck() {
        var machine = GRPCConnectionStateMachine()
        #expect(machine.beginGracefulShutdown(pingPayload: 42) == .sendShutdownNoticeAndPing(payload: 42))
        #expect(machine.state == .draining(pingPayload: 42))
        #expect(machine.acceptsInput)
        #expect(!machine.mayCloseWhenSessionIsDone, "an idle session waits for the PING ack")
        #expect(machine.pingAcked(payload: 42) == .sendFinalGoaway)
        #expect(machine.state == .goawaySent)
        #expect(machine.acceptsInput, "open streams still finish after the final GOAWAY")
    }

    @Test("an ack with another payload (a keepalive PING) does not end the drain")
    func otherPingIgnored() {
        var machine = GRPCConnectionStateMachine()
        _ = machine.beginGracefulShutdown(pingPayload: 7)
        #expect(machine.pingAcked(payload: 0) == .none)
        #expect(machine.state == .draining(pingPayload: 7))
        #expect(machine.pingAcked(payload: 7) == .sendFinalGoaway)
        #expect(machine.pingAcked(payload: 7) == .none, "the final GOAWAY goes once")
    }

    @Test("a peer that never acks still gets the final GOAWAY when the drain timer fires")
    func drainTimeout() {
        var machine = GRPCConnectionStateMachine()
        _ = machine.beginGracefulShutdown(pingPayload: 1)
        #expect(machine.drainPingTimedOut() == .sendFinalGoaway)
        #expect(machine.drainPingTimedOut() == .none)
        #expect(machine.pingAcked(payload: 1) == .none)
    }

    @Test("shutdown twice, or after close, does nothing")
    func idempotent() {
        var machine = GRPCConnectionStateMachine()
        _ = machine.beginGracefulShutdown(pingPayload: 1)
        #expect(machine.beginGracefulShutdown(pingPayload: 2) == .none)
        var closed = GRPCConnectionStateMachine()
        closed.close()
        #expect(closed.isClosing)
        #expect(!closed.acceptsInput)
        #expect(closed.beginGracefulShutdown(pingPayload: 3) == .none)
        closed.closed()
        #expect(closed.state == .closed)
    }

    @Test("a keepalive PING ack while active changes nothing")
    func activeAck() {
        var machine = GRPCConnectionStateMachine()
        #expect(machine.pingAcked(payload: 0) == .none)
        #expect(machine.drainPingTimedOut() == .none)
        #expect(machine.state == .active)
    }
}
