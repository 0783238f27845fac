import HeraldPrimitives
@testable import ProviderHTTP2
import Testing

/// The connection's state machine, event by event.
@Suite struct ConnectionStateMachineTests {
    typealias Machine = HTTP2ConnectionStateMachine

    @Test func settingsMakeAConnectionReadyOnce() {
        var machine = Machine()
        #expect(machine.isConnecting)
        do { let outcome = machine.settingsReceived(); #expect(outcome) }
        #expect(machine.state == .ready(.init()))
        do { let outcome = !machine.settingsReceived(); #expect(outcome) }  // later SETTINGS change nothing
    }

    /// Table: the state GOAWAY (or retiring) meets -> reported to the slot, state after.
    @Test(arguments: [
        (Machine.State.connecting, true, Machine.State.draining(.init())),
        (.ready(.init(pingOutstanding: true)), true, .draining(.init(pingOutstanding: true))),
        (.draining(.init()), false, .draining(.init())),
        (.closed, false, .closed),
    ])
    func stopAccepting(from start: Machine.State, reported: Bool, after: Machine.State) {
        var machine = Machine.in(start)
        do { let outcome = machine.stopAccepting() == reported; #expect(outcome) }
        #expect(machine.state == after)
    }

    @Test func closedReportsWhetherItWasEstablishedOnlyOnce() {
        var connecting = Machine()
        do { let outcome = connecting.closed() == false; #expect(outcome) }
        do { let outcome = connecting.closed() == nil; #expect(outcome) }
        var ready = Machine.in(.ready(.init()))
        do { let outcome = ready.closed() == true; #expect(outcome) }
        var draining = Machine.in(.draining(.init()))
        do { let outcome = draining.closed() == true; #expect(outcome) }
        #expect(draining.isClosed)
    }

    private static let start = Timestamp(timeIntervalSince1970: 1_700_000_000)

    private func tick(
        _ machine: inout Machine, after seconds: Double, quietFor quiet: Double, idleFor idle: Double, streams: Bool = false
    ) -> Machine.KeepAliveAction {
        let now = Self.start.addingTimeInterval(seconds)
        return machine.keepAliveTick(
            now: now, lastActivity: now.addingTimeInterval(-quiet), lastStreamActivity: now.addingTimeInterval(-idle),
            hasStreams: streams, pingInterval: .seconds(60), idleTimeout: .seconds(600))
    }

    @Test func keepAlivePingsAQuietConnectionAndClosesWhenThePingGoesUnanswered() {
        var machine = Machine.in(.ready(.init()))
        do { let outcome = tick(&machine, after: 60, quietFor: 10, idleFor: 10) == .none; #expect(outcome) }
        do { let outcome = tick(&machine, after: 120, quietFor: 60, idleFor: 60) == .ping; #expect(outcome) }
        #expect(machine.state == .ready(.init(pingOutstanding: true)))
        do { let outcome = tick(&machine, after: 180, quietFor: 60, idleFor: 120) == .closeUnanswered; #expect(outcome) }
    }

    @Test func anAcknowledgedPingKeepsTheConnection() {
        var machine = Machine.in(.ready(.init()))
        do { let outcome = tick(&machine, after: 60, quietFor: 60, idleFor: 60) == .ping; #expect(outcome) }
        machine.pingAcknowledged()
        do { let outcome = tick(&machine, after: 120, quietFor: 0, idleFor: 120) == .none; #expect(outcome) }
    }

    @Test func keepAliveRetiresAnIdleConnectionButNotOneWithStreams() {
        var idle = Machine.in(.ready(.init()))
        do { let outcome = tick(&idle, after: 600, quietFor: 0, idleFor: 600) == .retireIdle; #expect(outcome) }
        var busy = Machine.in(.ready(.init()))
        do { let outcome = tick(&busy, after: 600, quietFor: 0, idleFor: 600, streams: true) == .none; #expect(outcome) }
    }

    @Test func keepAliveStopsBeforeAndAfterTheConnectionIsEstablished() {
        var connecting = Machine()
        do { let outcome = tick(&connecting, after: 60, quietFor: 60, idleFor: 60) == .stop; #expect(outcome) }
        var closed = Machine.in(.closed)
        do { let outcome = tick(&closed, after: 60, quietFor: 60, idleFor: 60) == .stop; #expect(outcome) }
    }
}

extension HTTP2ConnectionStateMachine {
    /// A machine driven into `state` by the events that lead there.
    static func `in`(_ state: State) -> HTTP2ConnectionStateMachine {
        var machine = HTTP2ConnectionStateMachine()
        switch state {
        case .connecting:
            break
        case .ready(let liveness):
            _ = machine.settingsReceived()
            if liveness.pingOutstanding { _ = machine.forcePing() }
        case .draining(let liveness):
            _ = machine.settingsReceived()
            if liveness.pingOutstanding { _ = machine.forcePing() }
            _ = machine.stopAccepting()
        case .closed:
            _ = machine.closed()
        }
        return machine
    }

    /// Sends a PING by a tick long after the last activity.
    mutating func forcePing() -> KeepAliveAction {
        let now = Timestamp(timeIntervalSince1970: 1_700_000_000)
        return keepAliveTick(
            now: now, lastActivity: now.addingTimeInterval(-3600), lastStreamActivity: now,
            hasStreams: true, pingInterval: .seconds(60), idleTimeout: nil)
    }
}
