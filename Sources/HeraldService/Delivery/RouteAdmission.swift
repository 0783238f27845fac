import Synchronization

/// Per-route admission: how many messages may be sending through one provider
/// client (one endpoint and set of credentials) at once, how many may wait
/// for that, and which were turned away while the route was full.
///
/// Why: the scheduler's global dispatch slots are shared by every app. A
/// message takes a global slot only until its route admits it (or while it
/// waits for it); the send itself holds only the route's slot. A route that
/// is progressing (a send finished within `stallAfter`) makes messages wait:
/// backpressure, which costs nothing and keeps a busy route's throughput. A
/// route that is not (hung, or unknown yet) keeps at most `queueLimit`
/// waiting; every message beyond that is given back to the store and parked
/// here (an id, not a claim) until the route has room, so a hung route
/// never holds the slots other routes need. When a busy route stalls, its
/// waiters beyond `queueLimit` are sent back the same way.
///
/// A turned-away message's due lane (its bundle) is paused too, until the
/// route's next finished send or `pauseFor` at most (``pauseLane(_:now:)``):
/// otherwise, while a route has no answer yet (every burst after an idle
/// spell), the scheduler keeps claiming the lane's messages only for this
/// to give them back — on a provider answering in 100 ms, 11–25 % of a
/// burst was claimed twice (bench/RESULTS.md, "Session 46").
///
/// A pure state machine: every event returns what to do.
struct RouteAdmission {
    /// Messages sending on the route at once.
    let limit: Int
    /// Messages waiting for one of those on a route that is not progressing
    /// (each holds a global slot).
    let queueLimit: Int
    /// A route with no send finished for this long (ms) is not progressing.
    let stallAfter: Int64
    /// Longest a lane is paused for a turned-away message (ms): a route
    /// that never answers holds its lanes back this long at a time, so
    /// their messages for other routes still go (a batch per pause).
    let pauseFor: Int64

    private(set) var sending = 0
    /// When a send last finished (nil: never).
    private var lastProgress: Int64?
    /// When `sending` last went from none to one (nil: nothing sending).
    private var busySince: Int64?
    private var waiting: [Int] = []
    private var waitingHead = 0
    private(set) var parked: [String] = []
    /// The lanes paused for this route, until when.
    private(set) var pausedLanes: [String: Int64] = [:]

    init(limit: Int, queueLimit: Int, stallAfter: Int64 = 5_000, pauseFor: Int64 = 1_000) {
        self.limit = max(1, limit)
        self.queueLimit = max(0, queueLimit)
        self.stallAfter = stallAfter
        self.pauseFor = max(1, pauseFor)
    }

    func progressing(now: Int64) -> Bool {
        lastProgress.map { now - $0 <= stallAfter } ?? false
    }

    var waitingCount: Int { waiting.count - waitingHead }

    enum Admission: Equatable {
        /// Send now (a route slot is taken).
        case go
        /// Wait for ``Released/wake(_:)`` of this ticket.
        case wait
        /// Route saturated: give the claim back and ``park(_:)`` the message
        /// (after ``pauseLane(_:now:)`` for its lane).
        case full
    }

    /// A message of `lane` was turned away (`.full`) at `now`: until when
    /// to pause the lane — nil when this route paused it already and that
    /// pause runs still (the scheduler has it), or when the route has been
    /// busy without an answer for longer than `stallAfter` (hung: its
    /// messages are parked, and the lane's messages for other routes go
    /// at their pace). The pause ends at the route's next finished send
    /// (``Released``'s `lanes`) or at the returned instant, whichever
    /// comes first.
    mutating func pauseLane(_ lane: String, now: Int64) -> Int64? {
        if let until = pausedLanes[lane], until > now { return nil }
        guard let busySince, now - max(busySince, lastProgress ?? .min) <= stallAfter else { return nil }
        if pausedLanes.count >= Self.pausedLaneLimit { pausedLanes = pausedLanes.filter { $0.value > now } }
        guard pausedLanes.count < Self.pausedLaneLimit else { return nil }  // bounded: the release still parks
        let until = now + pauseFor
        pausedLanes[lane] = until
        return until
    }

    /// Most lanes one route keeps paused at once.
    static let pausedLaneLimit = 4_096

    mutating func admit(ticket: Int, now: Int64) -> Admission {
        if sending < limit && waitingCount == 0 {
            if sending == 0 { busySince = now }
            sending += 1
            return .go
        }
        if progressing(now: now) || waitingCount < queueLimit {
            waiting.append(ticket)
            return .wait
        }
        return .full
    }

    /// On a route that stopped progressing: the waiters beyond `queueLimit`
    /// (newest first), to be sent back (claim given back, parked).
    mutating func evictIfStalled(now: Int64) -> [Int] {
        guard waitingCount > queueLimit, !progressing(now: now) else { return [] }
        let evicted = Array(waiting[(waitingHead + queueLimit)...])
        waiting.removeLast(evicted.count)
        return evicted
    }

    /// A slot came free (a send finished, or a `.go` was not used).
    enum Released: Equatable {
        /// Hand the slot to this waiting ticket (it now counts as sending),
        /// and reschedule these parked messages now: the route progresses,
        /// so they may queue with the others (``release(now:)``); resume
        /// these paused lanes.
        case wake(Int, resume: [String] = [], lanes: [String] = [])
        /// Nothing waits: reschedule these parked messages now (up to the
        /// room there is); resume these paused lanes.
        case resume([String], lanes: [String] = [])
    }

    /// A slot came free at `now` (the route progresses). A parked message
    /// comes back even while others wait — up to `queueLimit` (at least one)
    /// per release, oldest first — or a route busy from the moment it was
    /// parked (a backlog released at once, before its first send finished)
    /// would keep it parked until the whole backlog had gone.
    mutating func release(now: Int64) -> Released {
        lastProgress = now
        let lanes = takePausedLanes(now: now)
        if waitingCount > 0 {
            let next = waiting[waitingHead]
            waitingHead += 1
            compact()
            return .wake(next, resume: takeParked(upTo: max(1, queueLimit)), lanes: lanes)
        }
        sending -= 1
        if sending == 0 { busySince = nil }
        return .resume(takeParked(), lanes: lanes)
    }

    /// The lanes whose pause for this route still runs, forgetting all:
    /// the route progresses, so their messages may wait for it again.
    private mutating func takePausedLanes(now: Int64) -> [String] {
        guard !pausedLanes.isEmpty else { return [] }
        defer { pausedLanes = [:] }
        return pausedLanes.compactMap { $0.value > now ? $0.key : nil }.sorted()
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
        takeParked(upTo: limit - sending + queueLimit - waitingCount)
    }

    /// Up to `count` parked messages, oldest first.
    private mutating func takeParked(upTo count: Int) -> [String] {
        guard count > 0, !parked.isEmpty else { return [] }
        let taken = Array(parked.prefix(count))
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
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        /// Tickets answered before their task got to `wait`: true = a slot, false = evicted.
        var woken: [Int: Bool] = [:]
    }

    private let state: Mutex<State>

    init(limit: Int, queueLimit: Int, stallAfter: Int64 = 5_000, pauseFor: Int64 = 1_000) {
        state = Mutex(State(admission: RouteAdmission(limit: limit, queueLimit: queueLimit, stallAfter: stallAfter, pauseFor: pauseFor)))
    }

    enum Entry {
        case go
        case wait(ticket: Int)
        /// Saturated: give the claim back and park; with `pauseLane`,
        /// pause the message's lane until then first.
        case full(pauseLane: Int64?)
    }

    /// What a slot coming free hands on: parked messages to reschedule now,
    /// paused lanes to resume.
    struct Resumed {
        var ids: [String] = []
        var lanes: [String] = []
    }

    /// Admits a message of `lane` (its due lane, paused when it is turned away).
    func enter(lane: String, now: Int64) -> Entry {
        let (entry, evicted) = state.withLock { state -> (Entry, [CheckedContinuation<Bool, Never>]) in
            state.nextTicket += 1
            let ticket = state.nextTicket
            let entry: Entry = switch state.admission.admit(ticket: ticket, now: now) {
            case .go: .go
            case .wait: .wait(ticket: ticket)
            case .full: .full(pauseLane: state.admission.pauseLane(lane, now: now))
            }
            let evicted = state.admission.evictIfStalled(now: now).compactMap { Self.take($0, answer: false, from: &state) }
            return (entry, evicted)
        }
        for waiter in evicted { waiter.resume(returning: false) }
        return entry
    }

    /// Waits until `ticket` (from `.wait`) is given a slot (true), or sent
    /// back because the route stalled (false: give the claim back and park).
    func wait(_ ticket: Int) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let ready = state.withLock { state -> Bool? in
                if let answer = state.woken.removeValue(forKey: ticket) { return answer }
                state.waiters[ticket] = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Frees a slot (or a `.wait` ticket that will not be used); returns
    /// parked messages to reschedule now and paused lanes to resume.
    func leave(ticket: Int? = nil, now: Int64) -> Resumed {
        let (wake, resume) = state.withLock { state -> (CheckedContinuation<Bool, Never>?, Resumed) in
            if let ticket {
                if state.admission.withdraw(ticket: ticket) { return (nil, Resumed()) }
                // Evicted: it holds nothing. Otherwise it was given a slot it will not use.
                if state.woken.removeValue(forKey: ticket) == false { return (nil, Resumed()) }
            }
            switch state.admission.release(now: now) {
            case .wake(let next, let parked, let lanes):
                return (Self.take(next, answer: true, from: &state), Resumed(ids: parked, lanes: lanes))
            case .resume(let ids, let lanes):
                return (nil, Resumed(ids: ids, lanes: lanes))
            }
        }
        wake?.resume(returning: true)
        return resume
    }

    /// Parks a message whose claim was given back; returns those to reschedule now.
    func park(_ id: String) -> Resumed {
        Resumed(ids: state.withLock { $0.admission.park(id) })
    }

    /// The waiter of `ticket`, or (when the slot came free between its
    /// `enter` and `wait`) a note that `wait` finds and returns at once.
    private static func take(_ ticket: Int, answer: Bool, from state: inout State) -> CheckedContinuation<Bool, Never>? {
        if let waiter = state.waiters.removeValue(forKey: ticket) { return waiter }
        state.woken[ticket] = answer
        return nil
    }
}
