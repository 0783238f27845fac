import GRPCEngine
import HeraldCore
import HeraldProtos
import HeraldStorage
import Synchronization

/// `herald.v1.PushService/StreamEvents` (issue 27, SPEC §3): the bundle's
/// delivery event log after a cursor, then live.
///
/// - Resumption: the stream starts strictly after the request's cursor
///   (empty: after the log's end now, or before its start with
///   `from_start`); events go in the log's order, so a consumer that
///   resumes with the last cursor it received gets every later event
///   exactly once. A cursor before what retention deleted is OUT_OF_RANGE
///   (at the start, or later if the consumer falls that far behind).
/// - Live: when a read comes back short, the stream looks again after
///   `pollInterval` (events of any replica within that, plus the time
///   their transaction took to become readable).
/// - Flow control: a page is read only once the previous one was written;
///   `send` suspends while the consumer does not read, so a stalled consumer
///   holds one page (`pageSize` events) and no more.
/// - Shared: the unfiltered streams of a bundle read its ``EventTail``:
///   the log's recent events read and encoded once for all of them.
/// - Bounded: at most `slots.capacity` streams at once; past it
///   RESOURCE_EXHAUSTED naming the setting.
/// - Scope: like the read side, a bundle the token may not see is NOT_FOUND.
struct StreamEventsService: Sendable {
    static let path = "/herald.v1.PushService/StreamEvents"
    /// Events read per query.
    static let pageSize = 256

    let policy: AccessPolicy
    let log: any DeliveryEventLog
    /// Unfiltered streams of a bundle share its tail (one read, one encoding).
    let tails: EventTails
    let slots: StreamSlots
    let pollInterval: Duration
    let sleep: @Sendable (Duration) async throws -> Void

    init(
        policy: AccessPolicy, log: any DeliveryEventLog, slots: StreamSlots, pollInterval: Duration,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.policy = policy
        self.log = log
        self.tails = EventTails(log: log)
        self.slots = slots
        self.pollInterval = pollInterval
        self.sleep = sleep
    }

    /// What a request asks for, decoded and checked.
    struct Request: Sendable, Hashable {
        var bundleID: String
        var cursor: EventCursor?
        var fromStart: Bool
        var filter: EventFilter
    }

    static func decode(_ message: [UInt8]) throws -> Request {
        try ProtobufC.withUnpacked(Herald__V1__StreamEventsRequest.self, from: message) { wire in
            var decoder = RequestDecoder()
            let bundleID = decoder.required(wire.bundle_id, "bundle_id", maxBytes: Validator.Limits.bundleID)
            var cursor: EventCursor?
            if let text = decoder.optionalString(wire.cursor, "cursor") {
                cursor = EventCursorText.parse(text)
                if cursor == nil { decoder.check("is not a cursor this server returned", "cursor") }
            }
            if cursor != nil && wire.from_start != 0 {
                decoder.check("set a cursor or from_start, not both", "from_start")
            }
            let campaignID = decoder.optionalCampaignID(wire.campaign_id)
            let kinds = decoder.enumSet(wire.kinds, count: wire.n_kinds, limit: EventKind.allCases.count * 2, "kinds") {
                EventKind(wire: $0)
            }
            try decoder.finish()
            return Request(bundleID: bundleID, cursor: cursor, fromStart: wire.from_start != 0,
                           filter: EventFilter(campaignID: campaignID, kinds: kinds))
        }
    }

    /// `send` takes a page of encoded events at a time (one write on the
    /// connection for the page, not one per event: bench/RESULTS.md,
    /// StreamEvents, 2026-11-28).
    func stream(_ request: GRPCRequest, send: @Sendable ([[UInt8]]) async throws -> Void) async throws {
        let caller = try policy.authenticate(request.metadata)
        let asked = try Self.decode(request.message)
        try ReadSideAccess.check(caller, bundleID: asked.bundleID)
        guard slots.enter() else {
            throw GRPCStatus(.resourceExhausted,
                "\(slots.capacity) event streams are open, the limit (--max-event-streams); retry later")
        }
        defer { slots.leave() }
        var position: EventCursor?
        if let cursor = asked.cursor {
            try await checkKept(cursor, bundleID: asked.bundleID)
            position = cursor
        } else if !asked.fromStart {
            position = try await log.latestEventCursor(bundleID: asked.bundleID)
        }
        // A filtered stream reads the log itself (the filter goes into the query).
        let tail = asked.filter == EventFilter() ? tails.enter(asked.bundleID) : nil
        defer { if tail != nil { tails.leave(asked.bundleID) } }
        while true {
            try Task.checkCancellation()
            let page: EventTail.Page
            if let shared = try await tail?.page(after: position, limit: Self.pageSize) {
                page = shared
            } else {
                let read = try await log.events(bundleID: asked.bundleID, after: position, filter: asked.filter, limit: Self.pageSize)
                page = EventTail.Page(events: read.events.map { $0.packed() }, reached: read.reached)
            }
            if let position { try await checkKept(position, bundleID: asked.bundleID) }
            if !page.events.isEmpty { try await send(page.events) }
            // Caught up when the read examined nothing new; a filtered page
            // can be short and still have moved on: read again at once.
            let moved = page.reached.map { reached in position.map { reached > $0 } ?? true } ?? false
            if let reached = page.reached { position = reached }
            if !moved { try await sleep(pollInterval) }
        }
    }

    /// OUT_OF_RANGE when retention deleted events after `cursor`.
    private func checkKept(_ cursor: EventCursor, bundleID: String) async throws {
        if let pruned = try await log.prunedEventCursor(bundleID: bundleID), cursor < pruned {
            throw GRPCStatus(.outOfRange,
                "cursor \(EventCursorText.format(cursor)) is older than the events kept (retention): "
                + "start again with from_start, and reconcile what was missed through GetMessage/ListMessages")
        }
    }
}

/// At most `capacity` holders at once (event streams).
final class StreamSlots: Sendable {
    let capacity: Int
    private let open = Mutex(0)

    init(capacity: Int) { self.capacity = capacity }

    /// Takes a slot; false when all are taken.
    func enter() -> Bool {
        open.withLock { open in
            guard open < capacity else { return false }
            open += 1
            return true
        }
    }

    func leave() { open.withLock { $0 -= 1 } }

    var count: Int { open.withLock { $0 } }
}
