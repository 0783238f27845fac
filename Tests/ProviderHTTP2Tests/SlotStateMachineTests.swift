@testable import ProviderHTTP2
import Testing

/// A stand-in connection: the slot machine only compares identities.
final class FakeConnection {}

/// The slot's state machine, event by event, without sockets.
@Suite struct SlotStateMachineTests {
    typealias Machine = HTTP2SlotStateMachine<FakeConnection>

    @Test func anIdleSlotConnectsOnlyWhenWorkIsQueued() {
        let machine = Machine()
        #expect(machine.pump(hasQueued: false).isWait)
        #expect(machine.pump(hasQueued: true).isConnect)
    }

    @Test func connectingThenReadyStartsStreamsOnThatConnection() {
        var machine = Machine()
        let connection = FakeConnection()
        machine.connecting(connection)
        #expect(machine.accepting === connection)
        #expect(machine.pump(hasQueued: true).isWait)  // no second connect while one is under way
        do { let outcome = machine.ready(connection); #expect(outcome) }
        #expect(machine.pump(hasQueued: true).startsOn(connection))
    }

    @Test func readyFromALetGoConnectionIsIgnored() {
        var machine = Machine()
        let old = FakeConnection()
        machine.connecting(old)
        do { let outcome = machine.stoppedAccepting(old); #expect(outcome) }
        do { let outcome = !machine.ready(old); #expect(outcome) }
        #expect(machine.accepting == nil)
    }

    /// Table: (ready before closing, retryable) -> action and the failures counted.
    @Test(arguments: [
        (wasReady: true, retryable: true, action: Machine.ClosedAction.pump, backingOff: false),
        (wasReady: true, retryable: false, action: Machine.ClosedAction.pump, backingOff: false),
        (wasReady: false, retryable: true, action: Machine.ClosedAction.failQueueAndBackOff(failures: 1), backingOff: true),
        (wasReady: false, retryable: false, action: Machine.ClosedAction.failQueue, backingOff: false),
    ])
    func theAcceptingConnectionClosing(wasReady: Bool, retryable: Bool, action: Machine.ClosedAction, backingOff: Bool) {
        var machine = Machine()
        let connection = FakeConnection()
        machine.connecting(connection)
        if wasReady { let ready = machine.ready(connection); #expect(ready) }
        do { let outcome = machine.closed(connection, wasReady: wasReady, retryable: retryable) == action; #expect(outcome) }
        #expect(machine.isBackingOff == backingOff)
        #expect(machine.accepting == nil)
    }

    @Test func failedConnectsCountUpUntilOneGetsReady() {
        var machine = Machine()
        for expected in 1...3 {
            let connection = FakeConnection()
            #expect(machine.pump(hasQueued: true).isConnect)
            machine.connecting(connection)
            do { let outcome = machine.closed(connection, wasReady: false, retryable: true) == .failQueueAndBackOff(failures: expected); #expect(outcome) }
            #expect(machine.pump(hasQueued: true).isWait)  // backing off: no connect
            do { let outcome = machine.reconnectTimerFired(); #expect(outcome) }
        }
        let good = FakeConnection()
        machine.connecting(good)
        do { let outcome = machine.ready(good); #expect(outcome) }
        do { let outcome = machine.closed(good, wasReady: true, retryable: true) == .pump; #expect(outcome) }
        let next = FakeConnection()
        machine.connecting(next)
        do { let outcome = machine.closed(next, wasReady: false, retryable: true) == .failQueueAndBackOff(failures: 1); #expect(outcome) }
    }

    @Test func aDrainingConnectionClosingChangesNothing() {
        var machine = Machine()
        let old = FakeConnection()
        let new = FakeConnection()
        machine.connecting(old)
        do { let outcome = machine.ready(old); #expect(outcome) }
        do { let outcome = machine.stoppedAccepting(old); #expect(outcome) }
        do { let outcome = !machine.stoppedAccepting(old); #expect(outcome) }  // reported once
        machine.connecting(new)
        do { let outcome = machine.closed(old, wasReady: true, retryable: true) == .none; #expect(outcome) }
        #expect(machine.accepting === new)
    }

    @Test func shutdownHandsBackTheAcceptingConnectionAndIgnoresLateEvents() {
        var machine = Machine()
        let connection = FakeConnection()
        machine.connecting(connection)
        do { let outcome = machine.shutdown() === connection; #expect(outcome) }
        #expect(machine.isShutdown)
        #expect(machine.pump(hasQueued: true).isWait)
        do { let outcome = machine.closed(connection, wasReady: false, retryable: true) == .none; #expect(outcome) }
        do { let outcome = !machine.reconnectTimerFired(); #expect(outcome) }  // a timer cancelled too late
        do { let outcome = !machine.ready(connection); #expect(outcome) }
    }
}

extension HTTP2SlotStateMachine.PumpAction {
    var isWait: Bool { if case .wait = self { true } else { false } }
    var isConnect: Bool { if case .connect = self { true } else { false } }
    func startsOn(_ connection: Connection) -> Bool {
        if case .start(let ready) = self { ready === connection } else { false }
    }
}
