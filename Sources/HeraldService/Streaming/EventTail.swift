import HeraldStorage
import Synchronization

/// One bundle's recent event log, read once and shared by its unfiltered
/// event streams (issue 27: ten consumers of a bundle cost one read and one
/// encoding per event, not ten).
///
/// The tail holds a contiguous stretch of the log, `(start, end]`: every
/// event of the bundle after `start` through `end`, in order, encoded once.
/// A stream at a position inside it is answered from memory; a stream at
/// `end` extends it with one read of the log after `end`, which every
/// stream arriving meanwhile joins (one read in flight per bundle). A stream
/// ahead of `end` (it started at the log's end after the tail last moved)
/// starts a new stretch at its position; a stream behind `start`, or
/// without a position yet, reads the log itself (``page(after:limit:)``
/// answers nil).
///
/// Correct because a read of the log is final through its `reached`
/// (``DeliveryEventLog/events(bundleID:after:filter:limit:)``: no
/// transaction still running can order an event before one returned), so
/// the stretch is exactly what any later read of it would return. Retention
/// is still checked by each stream after each page, as for a read of its own.
///
/// Bounded: at most ``maxEvents`` events and `maxBytes` encoded bytes, plus
/// the last read (at most ``readLimit`` events, kept whole for the streams
/// that waited for it); the oldest leave first (`start` moves up to the
/// last one dropped).
actor EventTail {
    /// Events read per extension (the log's limit is 10,000).
    static let readLimit = 1024
    /// Events kept at most.
    static let maxEvents = 8192

    struct Entry: Sendable {
        var cursor: EventCursor
        var packed: [UInt8]
    }

    /// A page for a stream: the encoded events and the position to resume after.
    struct Page: Sendable {
        var events: [[UInt8]]
        var reached: EventCursor?
    }

    let bundleID: String
    private let log: any DeliveryEventLog
    private let maxBytes: Int
    private var entries: [Entry] = []
    /// Index of the first kept entry in `entries` (dropped ones are removed in bulk).
    private var head = 0
    private var bytes = 0
    private var start: EventCursor?
    private var end: EventCursor?
    private var pending: (from: EventCursor, task: Task<(reached: EventCursor?, entries: [Entry]), any Error>)?

    init(bundleID: String, log: any DeliveryEventLog, maxBytes: Int) {
        self.bundleID = bundleID
        self.log = log
        self.maxBytes = maxBytes
    }

    /// At most `limit` events after `position`, or nil when the stream must
    /// read the log itself (no position yet, or behind the stretch kept).
    func page(after position: EventCursor?, limit: Int) async throws -> Page? {
        guard let position, limit > 0 else { return nil }
        if let start, position < start { return nil }
        if start == nil || position > end! {
            // Ahead of the stretch (or none yet): a new one starts here.
            reset(at: position)
        }
        if position == end { try await extend() }
        // The stretch may have been restarted elsewhere while this stream waited.
        guard let start, let end, position >= start, position <= end else { return nil }
        return serve(after: position, limit: limit)
    }

    /// Events kept now (for tests and figures).
    var count: Int { entries.count - head }

    private func serve(after position: EventCursor, limit: Int) -> Page {
        // The first kept entry after `position` (entries are in cursor order).
        var low = head, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].cursor <= position { low = middle + 1 } else { high = middle }
        }
        let upper = min(entries.count, low + limit)
        let events = entries[low..<upper].map(\.packed)
        // All of the stretch examined: resume after its end (it may reach
        // past its last event); else after the last event served.
        let reached = upper == entries.count ? end : entries[upper - 1].cursor
        return Page(events: events, reached: reached)
    }

    private func reset(at position: EventCursor) {
        pending = nil  // a read in flight from the old end is ignored when it lands
        entries = []
        head = 0
        bytes = 0
        start = position
        end = position
    }

    /// One read after `end`, shared by every stream waiting for it.
    private func extend() async throws {
        guard let from = end else { return }
        if pending?.from != from {
            let (log, bundleID) = (log, bundleID)
            pending = (from, Task {
                let page = try await log.events(bundleID: bundleID, after: from, filter: EventFilter(), limit: Self.readLimit)
                return (page.reached, page.events.map { Entry(cursor: $0.cursor, packed: $0.packed()) })
            })
        }
        guard let task = pending?.task else { return }
        let read: (reached: EventCursor?, entries: [Entry])
        do {
            read = try await task.value
        } catch {
            if pending?.task == task { pending = nil }
            throw error
        }
        // The first waiter to wake applies the read; the stretch must still end where it began.
        guard pending?.task == task, end == from else { return }
        pending = nil
        for entry in read.entries where entry.cursor > from {
            entries.append(entry)
            bytes += entry.packed.count
        }
        if let reached = read.reached, reached > from { end = reached }
        trim(keepingAfter: from)
    }

    /// Drops the oldest events past the bounds, never one after `kept`: the
    /// streams that waited at `kept` are served from what this read added.
    private func trim(keepingAfter kept: EventCursor) {
        var dropped: EventCursor?
        while count > 0 && entries[head].cursor <= kept && (count > Self.maxEvents || bytes > maxBytes) {
            bytes -= entries[head].packed.count
            dropped = entries[head].cursor
            head += 1
        }
        if let dropped { start = dropped }
        // Compact once the dropped prefix outweighs what is kept.
        if head > 0 && head >= entries.count - head {
            entries.removeFirst(head)
            head = 0
        }
    }
}

/// The tails of the bundles that have unfiltered event streams open: one
/// per bundle while a stream uses it, gone with its last stream. Their
/// bytes share one budget: a tail keeps at most the budget divided by the
/// tails open when it was made (at least 64 KiB), so all of them together
/// stay within the budget times the harmonic number of their count.
final class EventTails: Sendable {
    private struct Held {
        var tail: EventTail
        var users: Int
    }

    let budget: Int
    private let log: any DeliveryEventLog
    private let held = Mutex<[String: Held]>([:])

    init(log: any DeliveryEventLog, budget: Int = 16 << 20) {
        self.log = log
        self.budget = budget
    }

    /// The bundle's tail, held until ``leave(_:)``.
    func enter(_ bundleID: String) -> EventTail {
        held.withLock { held in
            if var entry = held[bundleID] {
                entry.users += 1
                held[bundleID] = entry
                return entry.tail
            }
            let share = max(64 << 10, budget / (held.count + 1))
            let tail = EventTail(bundleID: bundleID, log: log, maxBytes: share)
            held[bundleID] = Held(tail: tail, users: 1)
            return tail
        }
    }

    func leave(_ bundleID: String) {
        held.withLock { held in
            guard var entry = held[bundleID] else { return }
            entry.users -= 1
            held[bundleID] = entry.users > 0 ? entry : nil
        }
    }

    /// Bundles with a tail now.
    var count: Int { held.withLock { $0.count } }
}
