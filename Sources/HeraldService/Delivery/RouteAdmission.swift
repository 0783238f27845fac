import Synchronization

/// Per-route admission: how many messages may be sending through one APNs
/// client (one endpoint and set of credentials) at once, how many may wait
/// for that, and which were turned away while the route was full.
///
/// Why: the scheduler's global dispatch slots are shared by every app. A
/// message takes a global slot only until its route admits it (or queues it,
/// boundedly); the send itself holds only the route's slot. So a hung or slow
/// route fills its own slots and queue, and every message beyond that is
/// given back to the store and parked here (an id, not a claim) until the
/// route has room: it never holds the slots other routes need.
///
/// A pure state machine: every event returns what to do.
struct RouteAdmission {
    /// Messages sending on the route at once.
    let limit: Int
    /// Messages waiting for one of those (each holds a global slot).
    let queueLimit: Int

    private(set) var sending = 0
    private var waiting: [Int] = []
    private var waitingHead = 0
    private(set) var parked: [String] = []

    init(limit: Int, queueLimit: Int) {
        self.limit = max(1, limit)
        self.queueLimit = max(0, queueLimit)
    }

    var waitingCount: Int { waiting.count - waitingHead }

    enum Admission: Equatable {
        /// Send now (a route slot is taken).
        case go
        /// Wait for ``Released/wake(_:)`` of this ticket.
        case wait
        /// Route saturated: give the claim back and ``park(_:)`` the message.
        case full
    }

    mutating func admit(ticket: Int) -> Admission {
        if sending < limit && waitingCount == 0 {
            sending += 1
            return .go
        }
        if waitingCount < queueLimit {
            waiting.append(ticket)
            return .wait
        }
        return .full
    }

    /// A slot came free (a send finished, or a `.go` was not used).
    enum Released: Equatable {
        /// Hand the slot to this waiting ticket (it now counts as sending).
        case wake(Int)
        /// Nothing waits: reschedule these parked messages now (up to the room there is).
        case resume([String])
    }

    mutating func release() -> Released {
        if waitingCount > 0 {
            let next = waiting[waitingHead]
            waitingHead += 1
            compact()
            return .wake(next)
        }
        sending -= 1
        return .resume(takeParked())
    }

    /// A waiting ticket gave up (its message went elsewhere); true if it was waiting.
    mutating func withdraw(ticket: Int) -> Bool {
        guard let index = waiting[waitingHead...].firstIndex(of: ticket) else { return false }
        waiting.remove(at: index)
        return true
    }

    /// Parks a message turned away by `.full` (after its claim was given
    /// back). Returns messages to reschedule now, when room came meanwhile.
    mutating func park(_ id: String) -> [String] {
        parked.append(id)
        return waitingCount == 0 && sending < limit ? takeParked() : []
    }

    /// As many parked messages as the route has room for, oldest first.
    private mutating func takeParked() -> [String] {
        let room = limit - sending + queueLimit - waitingCount
        guard room > 0, !parked.isEmpty else { return [] }
        let taken = Array(parked.prefix(room))
        parked.removeFirst(taken.count)
        return taken
    }

    private mutating func compact() {
        if waitingHead > 64 && waitingHead * 2 > waiting.count {
            waiting.removeFirst(waitingHead)
            waitingHead = 0
        }
    }
}

/// ``RouteAdmission`` for one route, shared by the dispatcher's tasks:
/// carries out its actions (resuming waiters).
final class RouteGate: Sendable {
    private struct State {
        var admission: RouteAdmission
        var nextTicket = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Tickets given a slot before their task got to `wait`.
        var woken: Set<Int> = []
    }

    private let state: Mutex<State>

    init(limit: Int, queueLimit: Int) {
        state = Mutex(State(admission: RouteAdmission(limit: limit, queueLimit: queueLimit)))
    }

    enum Entry {
        case go
        case wait(ticket: Int)
        case full
    }

    func enter() -> Entry {
        state.withLock { state in
            state.nextTicket += 1
            let ticket = state.nextTicket
            switch state.admission.admit(ticket: ticket) {
            case .go: return .go
            case .wait: return .wait(ticket: ticket)
            case .full: return .full
            }
        }
    }

    /// Waits until `ticket` (from `.wait`) is given a slot.
    func wait(_ ticket: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if state.woken.remove(ticket) != nil { return true }
                state.waiters[ticket] = continuation
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Frees a slot (or a `.wait` ticket that will not be used); returns
    /// parked messages to reschedule now.
    func leave(ticket: Int? = nil) -> [String] {
        let (wake, resume) = state.withLock { state -> (CheckedContinuation<Void, Never>?, [String]) in
            if let ticket {
                if state.admission.withdraw(ticket: ticket) { return (nil, []) }
                state.woken.remove(ticket)  // it was given a slot it will not use
            }
            switch state.admission.release() {
            case .wake(let next):
                return (Self.take(next, from: &state), [])
            case .resume(let ids):
                return (nil, ids)
            }
        }
        wake?.resume()
        return resume
    }

    /// Parks a message whose claim was given back; returns those to reschedule now.
    func park(_ id: String) -> [String] {
        state.withLock { $0.admission.park(id) }
    }

    /// The waiter of `ticket`, or (when the slot came free between its
    /// `enter` and `wait`) a note that `wait` finds and returns at once.
    private static func take(_ ticket: Int, from state: inout State) -> CheckedContinuation<Void, Never>? {
        if let waiter = state.waiters.removeValue(forKey: ticket) { return waiter }
        state.woken.insert(ticket)
        return nil
    }
}
