public import HeraldStorage
import HeraldPrimitives

/// Where a due message queues in the ``DueIndex``: its lane (the bundle, so
/// one bundle's backlog never delays another's due pushes) and whether it
/// goes before the lane's other due messages (a transactional push, SPEC
/// §4b).
public struct DueSlot: Sendable, Hashable {
    /// The lane: the message's bundle id ("" when not known).
    public var lane: String
    /// Transactional: popped before the lane's other due messages.
    public var urgent: Bool

    /// A slot in `lane`, `urgent` for a transactional message.
    public init(lane: String = "", urgent: Bool = false) {
        self.lane = lane
        self.urgent = urgent
    }
}

extension StoredMessage {
    /// Its slot in the due index: its bundle's lane, urgent when transactional.
    public var dueSlot: DueSlot { DueSlot(lane: bundleID, urgent: transactional) }
}

extension PendingEntry {
    /// Its slot in the due index (the rebuild at start).
    public var dueSlot: DueSlot { DueSlot(lane: bundleID, urgent: transactional) }
}

/// Messages waiting for their next action, fair across lanes (bundles):
/// each lane keeps its own due-time heaps (transactional first, then by due
/// time, ties by id), and ``popDue(now:limit:)`` takes one message from each
/// lane that has one due, round-robin, so a lane with a million due
/// messages (a held campaign released at once) gets one turn in each round
/// like a lane with one. A lane may be paused until an instant (its
/// throttle): it is skipped until then.
///
/// Deletion is lazy: a removed or rescheduled id leaves a stale heap entry
/// that is skipped when it surfaces; a lane's heaps are compacted when
/// stale entries outnumber live ones, and an empty lane is dropped, so the
/// memory is bounded by the live entries.
///
/// An id is kept as a ``Key``: a message id (a lowercase UUID) packed into
/// 16 bytes, a lane by number. A queued message so holds no heap object of
/// its own — a million held messages used to pin a million id strings (and,
/// for bundle ids past 15 bytes, as many lane strings) allocated while they
/// were claimed, scattered through the allocator's heap for as long as they
/// were held — and the heaps sift and the tables hash plain integers.
struct DueIndex {
    /// An id as the index keeps it: a Herald message id's 128 bits
    /// (`UUIDText.parse`), or, for any other id (tests, and a UUID whose
    /// high half is all ones), `high` all ones and `low` the id's number in
    /// `others`. Packed ids sort as their text does; other ids after them,
    /// in the order they were first queued.
    struct Key: Hashable {
        var high: UInt64
        var low: UInt64

        var isOther: Bool { high == .max }
    }

    struct Entry: Comparable {
        var dueAt: Int64
        var key: Key
        var version: UInt32

        /// By due time, ties by id.
        static func < (a: Entry, b: Entry) -> Bool {
            a.dueAt < b.dueAt || (a.dueAt == b.dueAt && (a.key.high, a.key.low) < (b.key.high, b.key.low))
        }
        static func == (a: Entry, b: Entry) -> Bool { a.dueAt == b.dueAt && a.key == b.key }
    }

    /// A binary min-heap (the lanes' entries; the waiting lanes' heads).
    struct Heap<Element: Comparable> {
        var entries: [Element] = []

        var first: Element? { entries.first }
        var count: Int { entries.count }

        mutating func push(_ element: Element) {
            entries.append(element)
            var child = entries.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard entries[child] < entries[parent] else { return }
                entries.swapAt(child, parent)
                child = parent
            }
        }

        mutating func popFirst() {
            let last = entries.removeLast()
            guard !entries.isEmpty else { return }
            entries[0] = last
            siftDown(0)
        }

        mutating func rebuild(keeping keep: (Element) -> Bool) {
            entries.removeAll { !keep($0) }
            for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
        }

        private mutating func siftDown(_ start: Int) {
            var parent = start
            while true {
                let left = 2 * parent + 1
                guard left < entries.count else { return }
                var smallest = left
                if left + 1 < entries.count && entries[left + 1] < entries[left] { smallest = left + 1 }
                guard entries[smallest] < entries[parent] else { return }
                entries.swapAt(parent, smallest)
                parent = smallest
            }
        }
    }

    /// One lane's messages.
    struct Lane {
        var urgent = Heap<Entry>()
        var regular = Heap<Entry>()
        var live = 0
        var pausedUntil: Int64 = .min
        /// Bumped whenever the lane's entry in `heads` or `ready` changes;
        /// older entries there are stale.
        var stamp: UInt64 = 0
        /// Whether the lane's current place is in `ready` (else in `heads`).
        var isReady = false
        /// The due time it is queued at in `heads` (nil: not queued there).
        var queuedDue: Int64?

        /// Its earliest due time, not before its pause ends (stale entries
        /// dropped first).
        var effectiveDue: Int64? {
            let due: Int64
            switch (urgent.first?.dueAt, regular.first?.dueAt) {
            case (let a?, let b?): due = min(a, b)
            case (let a?, nil): due = a
            case (nil, let b?): due = b
            case (nil, nil): return nil
            }
            return max(due, pausedUntil)
        }

        func hasDue(now: Int64) -> Bool {
            guard pausedUntil <= now else { return false }
            return (urgent.first?.dueAt ?? .max) <= now || (regular.first?.dueAt ?? .max) <= now
        }
    }

    /// A lane's earliest due time (not before its pause ends), as queued
    /// in `heads`.
    struct Head: Comparable {
        var dueAt: Int64
        var lane: String
        var stamp: UInt64

        /// By due time, ties by lane.
        static func < (a: Head, b: Head) -> Bool { a.dueAt < b.dueAt || (a.dueAt == b.dueAt && a.lane < b.lane) }
        static func == (a: Head, b: Head) -> Bool { a.dueAt == b.dueAt && a.lane == b.lane && a.stamp == b.stamp }
    }

    private var lanes: [String: Lane] = [:]
    /// The live version and lane (its number in `laneNumbers`) of each id;
    /// absent ids are not scheduled.
    private var live: [Key: (version: UInt32, lane: UInt32)] = [:]
    /// Ids that are not packed UUIDs, by number and back (live ones only).
    private var others: [String: UInt64] = [:]
    private var otherIDs: [UInt64: String] = [:]
    private var nextOther: UInt64 = 0
    /// The lanes holding messages, by number and back; a dropped lane's
    /// number is given to the next new lane, so numbers never run out (a
    /// lane emptied and refilled at every message would otherwise wrap a
    /// counter onto a lane still held).
    private var laneNumbers: [String: UInt32] = [:]
    private var laneNames: [UInt32: String] = [:]
    private var freeLaneNumbers: [UInt32] = []
    private var nextLaneNumber: UInt32 = 0
    private var nextVersion: UInt32 = 0
    /// Stamps of lane places, unique (a stale place never matches again).
    private var nextStamp: UInt64 = 0
    /// Lanes with nothing due yet, by their earliest due time (min-heap,
    /// lazy: an entry whose stamp is not its lane's is stale).
    private var heads = Heap<Head>()
    /// Lanes with something due, in turn order (a ring read from
    /// `readyStart`; stale by stamp like `heads`).
    private var ready: [(lane: String, stamp: UInt64)] = []
    private var readyStart = 0

    var count: Int { live.count }

    /// Lanes holding messages (for tests and figures).
    var laneCount: Int { lanes.count }

    /// Numbered ids and lanes (for tests: none once nothing is queued).
    var numberedCount: Int { others.count + otherIDs.count + laneNumbers.count + laneNames.count }

    /// Lane numbers ever made (for tests: bounded by the lanes held at once).
    var laneNumbersMade: UInt32 { nextLaneNumber }

    mutating func reserve(_ capacity: Int) {
        live.reserveCapacity(capacity)
    }

    /// Schedules `id` at `dueAt` in `slot`'s lane, replacing any earlier
    /// schedule of it.
    mutating func insert(id: String, dueAt: Int64, slot: DueSlot = DueSlot()) {
        nextVersion &+= 1
        let key = key(for: id, creating: true)!
        if let old = live[key] { release(lane: old.lane) }
        live[key] = (nextVersion, laneNumber(slot.lane))
        // Taken out of the dictionary while changed, so its heaps are not copied.
        var lane = lanes.removeValue(forKey: slot.lane) ?? Lane()
        let entry = Entry(dueAt: dueAt, key: key, version: nextVersion)
        if slot.urgent { lane.urgent.push(entry) } else { lane.regular.push(entry) }
        lane.live += 1
        let stored = lane.urgent.count + lane.regular.count
        if stored > 1024 && stored > 2 * lane.live { compact(&lane) }
        // A ready lane is looked at on its turn; a waiting one may now be due
        // sooner (only an entry before its queued head changes that).
        if !lane.isReady && (lane.queuedDue.map { entry.dueAt < $0 } ?? true) { queueHead(slot.lane, &lane) }
        lanes[slot.lane] = lane
    }

    mutating func remove(id: String) {
        guard let key = key(for: id, creating: false), let old = live.removeValue(forKey: key) else { return }
        forget(key)
        release(lane: old.lane)
    }

    /// Holds `lane` back until `until` (its throttle, or a route that
    /// turned its messages away): nothing of it is popped before then.
    mutating func pause(lane name: String, until: Int64) {
        guard var lane = lanes.removeValue(forKey: name) else { return }
        lane.pausedUntil = until
        lane.isReady = false
        queueHead(name, &lane)
        lanes[name] = lane
    }

    /// Ends `lane`'s pause now, if one runs (a route that turned its
    /// messages away answered): its due messages may be popped again. A
    /// throttled lane's rate is checked at each pop, so this never lets
    /// it exceed its rate.
    mutating func resume(lane name: String, now: Int64) {
        guard let lane = lanes[name], lane.pausedUntil > now else { return }
        pause(lane: name, until: .min)
    }

    /// The earliest time anything may be popped (a lane's due time, not
    /// before its pause ends).
    mutating func peekDueAt() -> Int64? {
        var earliest: Int64?
        // Ready lanes: look at each (there is one per bundle with due work).
        var index = readyStart
        while index < ready.count {
            let (name, stamp) = ready[index]
            index += 1
            guard var lane = lanes.removeValue(forKey: name) else { continue }
            if lane.isReady && lane.stamp == stamp {
                dropStale(&lane)
                if let due = lane.effectiveDue { earliest = min(earliest ?? due, due) }
            }
            lanes[name] = lane
        }
        dropStaleHeads()
        if let top = heads.first { earliest = min(earliest ?? top.dueAt, top.dueAt) }
        return earliest
    }

    /// Removes and returns up to `limit` ids due at or before `now`: one
    /// from each lane with one due in turn (its transactional ones first,
    /// then the earliest), round after round.
    mutating func popDue(now: Int64, limit: Int) -> [String] {
        promoteDueLanes(now: now)
        var out: [String] = []
        while out.count < limit, readyStart < ready.count {
            let (name, stamp) = ready[readyStart]
            readyStart += 1
            guard var lane = lanes.removeValue(forKey: name) else { continue }
            guard lane.isReady, lane.stamp == stamp else {
                lanes[name] = lane
                continue
            }
            if let throttle = throttles[name], throttle.tat > now * 1000 + Self.throttleBurstMicros {
                // Over its rate: the lane waits until its next slot is near.
                lane.pausedUntil = (throttle.tat - Self.throttleBurstMicros + 999) / 1000
            } else if let entry = popOne(&lane, now: now) {
                out.append(id(of: entry.key))
                live[entry.key] = nil
                forget(entry.key)
                lane.live -= 1
                if var throttle = throttles[name] {
                    throttle.tat = max(throttle.tat, now * 1000) + throttle.spacing
                    throttles[name] = throttle
                    throttleWaits.append(max(0, now - entry.dueAt))
                }
            }
            if lane.live == 0 {  // empty: dropped
                forgetLane(name)
                continue
            }
            if lane.hasDue(now: now) {
                // Its next turn, after every other ready lane's.
                nextStamp &+= 1
                lane.stamp = nextStamp
                ready.append((name, lane.stamp))
            } else {
                lane.isReady = false
                queueHead(name, &lane)
            }
            lanes[name] = lane
        }
        compactReady()
        return out
    }

    // MARK: Keys

    /// `id`'s key: its packed bits, or its number among the other ids
    /// (numbered when `creating`, else nil when it has none).
    private mutating func key(for id: String, creating: Bool) -> Key? {
        if let bits = UUIDText.parse(id), bits.high != .max { return Key(high: bits.high, low: bits.low) }
        if let number = others[id] { return Key(high: .max, low: number) }
        guard creating else { return nil }
        nextOther &+= 1
        others[id] = nextOther
        otherIDs[nextOther] = id
        return Key(high: .max, low: nextOther)
    }

    /// The id `key` stands for (a live one).
    private func id(of key: Key) -> String {
        key.isOther ? otherIDs[key.low] ?? "" : UUIDText.format(high: key.high, low: key.low)
    }

    /// Drops an id's number once it is no longer queued (its stale heap
    /// entries are never live again: a new number comes with a new insert).
    private mutating func forget(_ key: Key) {
        guard key.isOther, let id = otherIDs.removeValue(forKey: key.low) else { return }
        others[id] = nil
    }

    // MARK: Lanes

    /// `name`'s lane number, given when first queued (a freed one first).
    private mutating func laneNumber(_ name: String) -> UInt32 {
        if let number = laneNumbers[name] { return number }
        let number: UInt32
        if let free = freeLaneNumbers.popLast() {
            number = free
        } else {
            nextLaneNumber += 1
            number = nextLaneNumber
        }
        laneNumbers[name] = number
        laneNames[number] = name
        return number
    }

    /// Drops a dropped lane's number (no live entry names it: the lane is empty).
    private mutating func forgetLane(_ name: String) {
        guard let number = laneNumbers.removeValue(forKey: name) else { return }
        laneNames[number] = nil
        freeLaneNumbers.append(number)
    }

    /// Drops one live entry's count from lane number `number` (its heap
    /// entry goes stale); an emptied lane is dropped with its queued place.
    private mutating func release(lane number: UInt32) {
        guard let name = laneNames[number], var lane = lanes.removeValue(forKey: name) else { return }
        lane.live -= 1
        guard lane.live > 0 else {
            forgetLane(name)
            return
        }
        // A waiting lane's queued head may have been the removed entry: it
        // stays queued (too early is harmless: `promoteDueLanes` re-checks).
        lanes[name] = lane
    }

    /// Queues a waiting lane in `heads` at its current effective due time.
    private mutating func queueHead(_ name: String, _ lane: inout Lane) {
        dropStale(&lane)
        nextStamp &+= 1
        lane.stamp = nextStamp
        lane.queuedDue = lane.effectiveDue
        guard let due = lane.queuedDue else { return }
        pushHead(Head(dueAt: due, lane: name, stamp: lane.stamp))
    }

    /// Moves every waiting lane whose effective due time has come to the
    /// back of the ready ring.
    private mutating func promoteDueLanes(now: Int64) {
        while let top = heads.first, top.dueAt <= now {
            popHead()
            guard var lane = lanes.removeValue(forKey: top.lane) else { continue }
            if !lane.isReady && lane.stamp == top.stamp {
                dropStale(&lane)
                if lane.hasDue(now: now) {
                    lane.isReady = true
                    lane.queuedDue = nil
                    nextStamp &+= 1
                    lane.stamp = nextStamp
                    ready.append((top.lane, lane.stamp))
                } else {
                    queueHead(top.lane, &lane)  // its head moved later (removed entries) or it is paused
                }
            }
            lanes[top.lane] = lane
        }
    }

    /// The lane's next due id: a due transactional one first, else the earliest due.
    private func popOne(_ lane: inout Lane, now: Int64) -> Entry? {
        dropStale(&lane)
        guard lane.pausedUntil <= now else { return nil }
        var popped: Entry?
        if let top = lane.urgent.first, top.dueAt <= now {
            lane.urgent.popFirst()
            popped = top
        } else if let top = lane.regular.first, top.dueAt <= now {
            lane.regular.popFirst()
            popped = top
        }
        return popped
    }

    // MARK: Throttles

    /// A lane's rate (SPEC §4b `max-per-second`): a virtual schedule
    /// (GCRA) in microseconds — each pop takes the next slot, `spacing`
    /// after the last; a lane whose next slot is more than
    /// ``throttleBurstMicros`` ahead is paused until it is near.
    struct Throttle: Equatable {
        var spacing: Int64
        var tat: Int64 = .min
    }

    /// How far ahead of its slots a throttled lane may pop: 100 ms (the pops
    /// of one wake-up; smooth over any second, well inside 10 % over 10 s).
    static let throttleBurstMicros: Int64 = 100_000

    private var throttles: [String: Throttle] = [:]
    /// How long each throttled pop waited past its due time (ms), until taken.
    private var throttleWaits: [Int64] = []

    /// The lanes' rates (per second; lanes not named are not throttled).
    /// A lane keeps its schedule while its rate is unchanged.
    mutating func setRates(_ rates: [String: Int]) {
        var next: [String: Throttle] = [:]
        for (lane, rate) in rates where rate > 0 {
            let spacing = max(1, 1_000_000 / Int64(rate))
            if let kept = throttles[lane], kept.spacing == spacing {
                next[lane] = kept
            } else {
                next[lane] = Throttle(spacing: spacing)
            }
        }
        // A lane no longer throttled is released from its pause.
        for lane in throttles.keys where next[lane] == nil {
            if var state = lanes.removeValue(forKey: lane) {
                state.pausedUntil = .min
                if !state.isReady { queueHead(lane, &state) }
                lanes[lane] = state
            }
        }
        throttles = next
    }

    /// The waits of the throttled pops since the last call (ms), emptied.
    mutating func takeThrottleWaits() -> [Int64] {
        defer { throttleWaits.removeAll(keepingCapacity: true) }
        return throttleWaits
    }

    private func isLive(_ entry: Entry) -> Bool { live[entry.key]?.version == entry.version }

    private func dropStale(_ lane: inout Lane) {
        while let top = lane.urgent.first, !isLive(top) { lane.urgent.popFirst() }
        while let top = lane.regular.first, !isLive(top) { lane.regular.popFirst() }
    }

    private func compact(_ lane: inout Lane) {
        lane.urgent.rebuild(keeping: isLive)
        lane.regular.rebuild(keeping: isLive)
    }

    private mutating func compactReady() {
        if readyStart == ready.count {
            ready.removeAll(keepingCapacity: true)
            readyStart = 0
        } else if readyStart > 1024 && readyStart > ready.count / 2 {
            ready.removeFirst(readyStart)
            readyStart = 0
        }
    }

    // MARK: The heads heap

    private mutating func dropStaleHeads() {
        while let top = heads.first {
            if let lane = lanes[top.lane], !lane.isReady, lane.stamp == top.stamp { return }
            heads.popFirst()
        }
    }

    private mutating func pushHead(_ pushed: Head) {
        heads.push(pushed)
        // Stale heads are bounded: compacted when they outnumber the lanes.
        // The pushed head is kept by identity: its lane is out of `lanes`
        // while its caller queues it, so the lookup would call it stale and
        // the lane would wait, unqueued, for good (a held campaign's lane
        // stalled so behind another bundle's earlier head).
        if heads.count > 1024 && heads.count > 4 * max(lanes.count, 1) {
            heads.rebuild { head in
                head == pushed || (lanes[head.lane].map { !$0.isReady && $0.stamp == head.stamp } ?? false)
            }
        }
    }

    private mutating func popHead() {
        heads.popFirst()
    }
}
