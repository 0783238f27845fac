import Foundation
import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldPostgres
@testable import HeraldStorage

/// Issue 27 (SPEC §3 StreamEvents) at the store, on every kind: the
/// delivery event log. Each write path appends exactly its events, once,
/// in the same write; a reader resuming after any cursor sees every later
/// event exactly once, in order, and nothing of another bundle; filters
/// return exactly their subset while `reached` moves past what they skip;
/// retention trims the oldest events and moves the bundle's watermark; a
/// restart keeps the log.
@Suite("Store contract: the delivery event log", .storeCaseLimit)
struct EventLogContractTests {
    typealias Log = DeliveryEventLog & EventLogPruning

    static func log(_ store: any ContractStore) throws -> any Log {
        try #require(store as? any Log, "every store kind keeps the delivery event log")
    }

    /// What a test compares of an event: its kind, message, device and
    /// reason (the cursor and time are checked apart).
    struct Entry: Hashable, Comparable, CustomStringConvertible {
        var kind: EventKind
        var messageID: String
        var deviceToken: String?
        var reason: String?

        init(_ kind: EventKind, _ messageID: String, _ deviceToken: String? = nil, reason: String? = nil) {
            self.kind = kind
            self.messageID = messageID
            self.deviceToken = deviceToken
            self.reason = reason
        }

        init(_ event: DeliveryEvent) {
            self.init(event.kind, event.messageID, event.deviceToken, reason: event.reason)
        }

        static func < (a: Self, b: Self) -> Bool { a.description < b.description }
        var description: String { "\(kind.rawValue) \(messageID) \(deviceToken ?? "-") \(reason ?? "-")" }
    }

    /// PostgreSQL returns an event once no older transaction runs anywhere
    /// in the cluster (other cases' included): waits, bounded, until every
    /// committed event is readable. Other stores read their writes at once.
    static func settle(_ log: any Log) async throws {
        guard let store = log as? PostgresStore else { return }
        let deadline = ContinuousClock.now + .seconds(60)
        while try await !store.eventLogSettled() {
            guard ContinuousClock.now < deadline else {
                Issue.record("the PostgreSQL event log did not settle within 60 s")
                return
            }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Reads every event of `bundle` after `cursor`, `page` at a time,
    /// following `reached`; bounded.
    static func drain(
        _ log: any Log, _ bundle: String = "com.example.app", after cursor: EventCursor?,
        filter: EventFilter = EventFilter(), page: Int = 1_000
    ) async throws -> (events: [DeliveryEvent], reached: EventCursor?) {
        try await settle(log)
        var events: [DeliveryEvent] = []
        var position = cursor
        for _ in 0..<10_000 {
            let read = try await log.events(bundleID: bundle, after: position, filter: filter, limit: page)
            events += read.events
            guard let reached = read.reached else { return (events, position) }
            if let position { #expect(reached > position, "reached moves forward") }
            position = reached
        }
        Issue.record("the log did not end within 10,000 reads")
        return (events, position)
    }

    /// The events a step appended: read after `cursor`, checked to be in
    /// strictly increasing order after it, and moved past.
    static func step(_ log: any Log, _ cursor: inout EventCursor?) async throws -> [DeliveryEvent] {
        let read = try await drain(log, after: cursor)
        var last = cursor
        for event in read.events {
            if let last { #expect(event.cursor > last, "cursors increase: \(event.cursor) after \(last)") }
            last = event.cursor
        }
        cursor = read.reached ?? cursor
        return read.events
    }

    /// The step's events as a multiset (PostgreSQL's triggers of one
    /// statement fire in an order of their own; every store keeps a write's
    /// events together).
    static func entries(_ events: [DeliveryEvent]) -> [Entry] { events.map(Entry.init).sorted() }

    // MARK: hostile first

    @Test(arguments: StoreKind.all) func writesThatChangeNothingAppendNothing(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let log = try Self.log(store)
            #expect(try await log.latestEventCursor(bundleID: "com.example.app") == nil)
            #expect(try await log.prunedEventCursor(bundleID: "com.example.app") == nil)
            #expect(try await log.events(bundleID: "com.example.app", after: nil, filter: EventFilter(), limit: 10)
                == EventPage(events: [], reached: nil))
            let message = makeMessage(id: "m1", key: "k1")
            _ = try await store.schedule(message)
            var cursor: EventCursor?
            #expect(Self.entries(try await Self.step(log, &cursor)) == [Entry(.scheduled, "m1")])
            // No limit, a negative one: nothing, nothing looked at.
            for limit in [0, -1, Int.min] {
                #expect(try await log.events(bundleID: "com.example.app", after: nil, filter: EventFilter(), limit: limit)
                    == EventPage(events: [], reached: nil))
            }
            // An illegal change writes nothing, its outcomes included.
            await #expect(throws: StoreError.self) {
                try await store.transition(
                    id: "m1", from: .scheduled, to: .scheduled, dueAt: nil, providerMessageID: nil, lastError: nil,
                    now: now + 1, recording: [DeviceOutcome(messageID: "m1", deviceToken: "aa", kind: .sent, at: now + 1)])
            }
            // A claim, its release, a cancel without a match, a second
            // cancel, an unknown device's removal, an app's unregistration:
            // no state change, no event.
            _ = try #require(try await store.claim(id: "m1", from: .scheduled, now: now + 2))
            #expect(try await store.releaseClaim(id: "m1", now: now + 3))
            #expect(try await store.cancel(bundleID: "com.example.app", platform: .ios, userID: "someone-else",
                                           campaignID: "welcome", idempotencyKey: "k1", now: now + 4) == .notFound)
            #expect(try await store.removeDevice(bundleID: "com.example.app", deviceToken: "none", ifRegisteredBefore: .max) == false)
            _ = try await store.registerDevice(Device(bundleID: "com.example.app", platform: .ios, userID: "user-1",
                                                      deviceToken: "app-gone", locale: "en", timezone: "UTC",
                                                      environment: .production, registeredAt: now))
            #expect(try await store.unregisterDevice(bundleID: "com.example.app", deviceToken: "app-gone"))
            #expect(try await Self.step(log, &cursor).isEmpty)
            // Another bundle's cursor, a cursor far past the end: nothing.
            #expect(try await log.events(bundleID: "com.other.app", after: nil, filter: EventFilter(), limit: 10).events.isEmpty)
            #expect(try await log.events(bundleID: "com.example.app", after: EventCursor(major: .max, minor: .max),
                                         filter: EventFilter(), limit: 10).events.isEmpty)
        }
    }

    // MARK: what appends what

    /// The dispatcher hands the store the message's columns with a push's end
    /// (`Transition.subject`, from the claim); the events must be those the
    /// store writes when it reads them from the message: every column, every
    /// kind and reason mapping, outcomes first, then the state.
    @Test(arguments: StoreKind.all) func aPushsEventsAreTheSameWithOrWithoutTheClaimedSubject(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let log = try Self.log(store)
            var cursor: EventCursor?
            func outcomes(_ id: String) -> [DeviceOutcome] {
                [
                    DeviceOutcome(messageID: id, deviceToken: "aa", kind: .sent, providerMessageID: "apns-1", at: now + 11, httpStatus: 200),
                    DeviceOutcome(messageID: id, deviceToken: "bb", kind: .unregistered, at: now + 11, httpStatus: 410),
                    DeviceOutcome(messageID: id, deviceToken: "cc", kind: .revokeFailed, reason: "unregistered: Unregistered", at: now + 11),
                    DeviceOutcome(messageID: id, deviceToken: "dd", kind: .rejected, reason: "BadTopic", at: now + 11, httpStatus: 400),
                    DeviceOutcome(messageID: id, deviceToken: "ee", kind: .expired, at: now + 11),
                ]
            }
            var events: [String: [DeliveryEvent]] = [:]
            for (id, withSubject) in [("with", true), ("without", false)] {
                _ = try await store.schedule(makeMessage(id: id, key: "k-" + id))
                _ = try await Self.step(log, &cursor)
                let claimed = try #require(try await store.claim(ids: [id], now: now + 10).first)
                let ended = try await store.transitions([Transition(
                    id: id, from: .scheduled, to: .sent, providerMessageID: "apns-1", now: now + 11, outcomes: outcomes(id),
                    subject: withSubject ? EventSubject(claimed) : nil)])
                #expect(ended == [true])
                events[id] = try await Self.step(log, &cursor)
            }
            // The same rows but for the message (id, key) and the cursor.
            func comparable(_ event: DeliveryEvent) -> DeliveryEvent {
                var event = event
                event.cursor = EventCursor(major: 0, minor: 0)
                event.messageID = ""
                event.idempotencyKey = nil
                return event
            }
            // In one write's order on SQLite and in memory; PostgreSQL's
            // statement triggers keep an order of their own (docs/INTERNALS.md).
            func ordered(_ events: [DeliveryEvent]) -> [DeliveryEvent] {
                kind == .postgres ? events.sorted { ($0.deviceToken ?? "~") < ($1.deviceToken ?? "~") } : events
            }
            let with = ordered(try #require(events["with"])), without = ordered(try #require(events["without"]))
            #expect(with.count == 6 && with.map(comparable) == without.map(comparable))
            #expect(with.map(\.kind) == [.sent, .failed, .failed, .failed, .expired, .sent])
            #expect(with.map(\.reason) == [nil, "unregistered", "revoke_failed: unregistered: Unregistered", "BadTopic", nil, nil])
            #expect(with.map(\.httpStatus) == [200, 410, nil, 400, nil, nil])
            #expect(without.allSatisfy { $0.idempotencyKey == "k-without" })
            #expect(with.allSatisfy { $0.idempotencyKey == "k-with" && $0.campaignID == "welcome" && $0.userID == "user-1" && $0.at == now + 11 })
        }
    }

    @Test(arguments: StoreKind.all) func eachWritePathAppendsExactlyItsEventsOnceInOrder(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let log = try Self.log(store)
            var cursor: EventCursor?
            var seen: [EventCursor] = []
            func expectStep(_ expected: [Entry], _ comment: Comment) async throws {
                let events = try await Self.step(log, &cursor)
                #expect(Self.entries(events) == expected.sorted(), comment)
                seen += events.map(\.cursor)
                for event in events {
                    #expect(event.bundleID == "com.example.app" && event.userID == "user-1" && event.platform == .ios)
                }
            }

            // Schedule, then last request wins.
            let m1 = makeMessage(id: "m1", key: "k1")
            _ = try await store.schedule(m1)
            try await expectStep([Entry(.scheduled, "m1")], "Schedule")
            let scheduled = try #require(try await log.events(
                bundleID: "com.example.app", after: nil, filter: EventFilter(), limit: 1).events.first)
            #expect(scheduled.idempotencyKey == "k1" && scheduled.campaignID == "welcome" && scheduled.at == now)
            _ = try await store.schedule(makeMessage(id: "m2", key: "k1", createdAt: now + 1))
            try await expectStep([Entry(.superseded, "m1"), Entry(.scheduled, "m2")], "the replaced message")
            _ = try await store.cancel(bundleID: "com.example.app", platform: .ios, userID: "user-1", campaignID: "welcome",
                                       idempotencyKey: "k1", now: now + 2)
            try await expectStep([Entry(.cancelled, "m2")], "Cancel")
            // Cancelling again changes nothing.
            _ = try await store.cancel(bundleID: "com.example.app", platform: .ios, userID: "user-1", campaignID: "welcome",
                                       idempotencyKey: "k1", now: now + 3)
            try await expectStep([], "a second Cancel")

            // A push: each device's outcome, then the message's state.
            _ = try await store.schedule(makeMessage(id: "m3", key: "k3"))
            try await expectStep([Entry(.scheduled, "m3")], "Schedule")
            #expect(try await store.claim(ids: ["m3"], now: now + 10).map(\.id) == ["m3"])
            let ended = try await store.transitions([Transition(
                id: "m3", from: .scheduled, to: .sent, dueAt: nil, providerMessageID: "apns-1", lastError: nil, now: now + 11,
                outcomes: [
                    DeviceOutcome(messageID: "m3", deviceToken: "aa", kind: .sent, providerMessageID: "apns-1", at: now + 11,
                                  httpStatus: 200),
                    DeviceOutcome(messageID: "m3", deviceToken: "bb", kind: .unregistered, reason: "Unregistered",
                                  at: now + 11, httpStatus: 410),
                    DeviceOutcome(messageID: "m3", deviceToken: "cc", kind: .badDeviceToken, at: now + 11, httpStatus: 400),
                    DeviceOutcome(messageID: "m3", deviceToken: "dd", kind: .rejected, reason: "BadTopic", at: now + 11),
                ])])
            #expect(ended == [true])
            try await expectStep([
                Entry(.sent, "m3", "aa"), Entry(.failed, "m3", "bb", reason: "Unregistered"),
                Entry(.failed, "m3", "cc", reason: "bad_device_token"), Entry(.failed, "m3", "dd", reason: "BadTopic"),
                Entry(.sent, "m3"),
            ], "a push's end")
            let dead = try #require(try await log.events(
                bundleID: "com.example.app", after: seen[seen.count - 6], filter: EventFilter(kinds: [.failed]), limit: 10
            ).events.first { $0.deviceToken == "bb" })
            #expect(dead.httpStatus == 410 && dead.at == now + 11)

            // The app's reports: one per (message, device, kind); the first
            // OPENED also opens the message.
            for _ in 0..<2 {
                try await store.recordOutcome(DeviceOutcome(messageID: "m3", deviceToken: "aa", kind: .displayed, at: now + 20))
            }
            try await expectStep([Entry(.displayed, "m3", "aa")], "DISPLAYED reported twice")
            #expect(try await store.transition(id: "m3", from: .sent, to: .displayed, dueAt: nil, providerMessageID: nil,
                                               lastError: nil, now: now + 21))
            try await expectStep([Entry(.displayed, "m3")], "the message displayed")
            for _ in 0..<2 {
                try await store.recordOutcome(DeviceOutcome(messageID: "m3", deviceToken: "aa", kind: .opened, at: now + 22))
            }
            try await expectStep([Entry(.opened, "m3", "aa"), Entry(.opened, "m3")], "OPENED reported twice")
            try await store.recordOutcome(DeviceOutcome(messageID: "m3", deviceToken: "ee", kind: .opened, at: now + 23))
            try await expectStep([Entry(.opened, "m3", "ee")], "a second device opened it: the message was already")

            // The delivery policy: a hold (a device suppressed, one waiting).
            _ = try await store.schedule(makeMessage(id: "m4", key: "k4"))
            try await expectStep([Entry(.scheduled, "m4")], "Schedule")
            _ = try #require(try await store.claim(id: "m4", from: .scheduled, now: now + 30))
            #expect(try await store.hold(id: "m4", from: .scheduled, now: now + 31, recording: [
                DeviceOutcome(messageID: "m4", deviceToken: "aa", kind: .suppressed, reason: "frequency_cap", at: now + 31),
                DeviceOutcome(messageID: "m4", deviceToken: "bb", kind: .waiting, reason: "quiet_hours", at: now + 31,
                              notBefore: now + 60_000),
            ]))
            try await expectStep([
                Entry(.suppressed, "m4", "aa", reason: "frequency_cap"), Entry(.deferred, "m4"),
                Entry(.deferred, "m4", "bb", reason: "quiet_hours"),
            ], "a hold")
            _ = try #require(try await store.claim(id: "m4", from: .scheduled, now: now + 60_000))
            #expect(try await store.transition(
                id: "m4", from: .scheduled, to: .suppressed, dueAt: nil, providerMessageID: nil, lastError: nil,
                now: now + 60_001, recording: [
                    DeviceOutcome(messageID: "m4", deviceToken: "bb", kind: .suppressed, reason: "quiet_hours", at: now + 60_001),
                ]))
            try await expectStep([Entry(.suppressed, "m4", "bb", reason: "quiet_hours"), Entry(.suppressed, "m4")],
                                 "every device withheld")

            // Context-aware: the handoff, a cancel, the revoke push.
            _ = try await store.schedule(makeMessage(id: "m5", key: "k5", method: .contextAware))
            try await expectStep([Entry(.scheduled, "m5")], "Schedule")
            _ = try #require(try await store.claim(id: "m5", from: .scheduled, now: now + 40))
            #expect(try await store.transition(
                id: "m5", from: .scheduled, to: .handedOff, dueAt: now + 3_600_000, providerMessageID: nil, lastError: nil,
                now: now + 41, recording: [DeviceOutcome(messageID: "m5", deviceToken: "aa", kind: .handedOff, at: now + 41)]))
            try await expectStep([Entry(.handedOff, "m5", "aa"), Entry(.handedOff, "m5")], "a handoff")
            _ = try await store.cancel(bundleID: "com.example.app", platform: .ios, userID: "user-1", campaignID: "welcome",
                                       idempotencyKey: "k5", now: now + 42)
            try await expectStep([Entry(.cancelled, "m5")], "Cancel of a handed-off message")
            try await store.recordOutcome(DeviceOutcome(messageID: "m5", deviceToken: "aa", kind: .revoked, at: now + 43))
            try await store.recordOutcome(DeviceOutcome(messageID: "m5", deviceToken: "bb", kind: .revokeFailed,
                                                        reason: "unregistered: Unregistered", at: now + 43))
            try await expectStep([
                Entry(.revoked, "m5", "aa"), Entry(.failed, "m5", "bb", reason: "revoke_failed: unregistered: Unregistered"),
            ], "revoke pushes")

            // A transition that lost its race records its outcomes only.
            _ = try await store.schedule(makeMessage(id: "m6", key: "k6"))
            try await expectStep([Entry(.scheduled, "m6")], "Schedule")
            #expect(try await store.transition(
                id: "m6", from: .handedOff, to: .sent, dueAt: nil, providerMessageID: nil, lastError: nil, now: now + 50,
                recording: [DeviceOutcome(messageID: "m6", deviceToken: "aa", kind: .failed, reason: "no route", at: now + 50)])
                == false)
            try await expectStep([Entry(.failed, "m6", "aa", reason: "no route")], "a lost compare-and-set")

            // The terminal states a push ends in.
            for (id, state) in [("m7", MessageState.failed), ("m8", .expired), ("m9", .noDevices)] {
                _ = try await store.schedule(makeMessage(id: id, key: id))
                _ = try #require(try await store.claim(id: id, from: .scheduled, now: now + 70))
                #expect(try await store.transition(id: id, from: .scheduled, to: state, dueAt: nil, providerMessageID: nil,
                                                   lastError: "x", now: now + 71))
                try await expectStep([Entry(.scheduled, id), Entry(EventKind(rawValue: state.rawValue)!, id)], "\(state)")
            }

            // A dead token removed: the bundle, token and user, no message.
            _ = try await store.registerDevice(Device(bundleID: "com.example.app", platform: .ios, userID: "user-1",
                                                      deviceToken: "dead", locale: "en", timezone: "UTC",
                                                      environment: .production, registeredAt: now - 1_000))
            #expect(try await store.removeDevice(bundleID: "com.example.app", deviceToken: "dead", ifRegisteredBefore: now))
            try await expectStep([Entry(.deviceRemoved, "", "dead")], "removeDevice")
            let removed = try #require(try await log.events(
                bundleID: "com.example.app", after: nil, filter: EventFilter(kinds: [.deviceRemoved]), limit: 10).events.first)
            // At APNs' timestamp, or the store's clock when that is later
            // (the clock of this machine is before the tests' `now`).
            #expect(removed.campaignID == "" && removed.idempotencyKey == nil && removed.at <= now)

            // Nothing twice, and the latest cursor is the last event's.
            #expect(Set(seen).count == seen.count)
            #expect(try await log.latestEventCursor(bundleID: "com.example.app") == seen.last)
        }
    }

    @Test(arguments: StoreKind.all) func theCrashRulesUnconfirmedDevicesAreEvents(_ kind: StoreKind) async throws {
        try await withRestartableStore(kind) { store, restart in
            var cursor: EventCursor?
            let message = makeMessage(id: "m1", key: "k1")
            _ = try await store.schedule(message)
            let claimed = try #require(try await store.claim(id: "m1", from: .scheduled, now: now + 1))
            try await store.recordHandOver(messageID: "m1", deviceToken: "aa", push: try #require(claimed.pushStartedAt),
                                           at: now + 2)
            #expect(Self.entries(try await Self.step(try Self.log(store), &cursor)) == [Entry(.scheduled, "m1")])
            let reopened = try await restart()
            let recovery = try await reopened.recoverInterrupted(now: now + 5)
            #expect(recovery.unconfirmedDevices == 1)
            let log = try Self.log(reopened)
            #expect(Self.entries(try await Self.step(log, &cursor))
                == [Entry(.unconfirmed, "m1", "aa", reason: DeviceOutcomeKind.unconfirmedReason)])
        }
    }

    // MARK: reading

    /// Two bundles' interleaved events: 3 campaigns, several kinds.
    static func seed(_ store: any ContractStore) async throws {
        for i in 0..<24 {
            let bundle = i.isMultiple(of: 3) ? "com.other.app" : "com.example.app"
            let id = "m\(i)"
            _ = try await store.schedule(makeMessage(id: id, bundleID: bundle, campaignID: "c\(i % 4)", key: id))
            if i.isMultiple(of: 2) {
                _ = try #require(try await store.claim(id: id, from: .scheduled, now: now + Int64(i)))
                #expect(try await store.transition(
                    id: id, from: .scheduled, to: i.isMultiple(of: 4) ? .sent : .failed, dueAt: nil, providerMessageID: nil,
                    lastError: nil, now: now + Int64(i),
                    recording: [DeviceOutcome(messageID: id, deviceToken: "t\(i)", kind: i.isMultiple(of: 4) ? .sent : .failed,
                                              at: now + Int64(i))]))
            }
        }
    }

    @Test(arguments: StoreKind.all) func aReaderResumingAfterAnyCursorSeesEveryLaterEventOnce(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let log = try Self.log(store)
            try await Self.seed(store)
            let all = try await Self.drain(log, after: nil).events
            #expect(all.count == 16 + 8 * 2)  // 16 Schedules; 8 of them pushed (an outcome and a state each)
            #expect(all.allSatisfy { $0.bundleID == "com.example.app" })
            #expect(zip(all, all.dropFirst()).allSatisfy { $0.cursor < $1.cursor })
            #expect(try await log.latestEventCursor(bundleID: "com.example.app") == all.last?.cursor)
            #expect(try await Self.drain(log, "com.other.app", after: nil).events.allSatisfy { $0.bundleID == "com.other.app" })
            // From every position, in pages of 1, 2 and 5: exactly the rest.
            for (index, event) in all.enumerated() {
                for page in [1, 2, 5] {
                    let rest = try await Self.drain(log, after: event.cursor, page: page).events
                    #expect(rest == Array(all[(index + 1)...]), "after event \(index), pages of \(page)")
                }
            }
            // A position between two events (another bundle's) resumes at the next.
            let other = try await Self.drain(log, "com.other.app", after: nil).events
            for position in other.map(\.cursor) {
                #expect(try await Self.drain(log, after: position).events == all.filter { $0.cursor > position })
            }
        }
    }

    @Test(arguments: StoreKind.all) func filtersGiveExactlyTheirSubsetAndReachedMovesPastTheRest(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let log = try Self.log(store)
            try await Self.seed(store)
            let all = try await Self.drain(log, after: nil).events
            let filters = [
                EventFilter(campaignID: "c1"), EventFilter(kinds: [.sent]), EventFilter(kinds: [.failed, .scheduled]),
                EventFilter(campaignID: "c2", kinds: [.failed]), EventFilter(campaignID: "none"),
                EventFilter(kinds: [.deviceRemoved]),
            ]
            for filter in filters {
                for page in [1, 3, 1_000] {
                    let read = try await Self.drain(log, after: nil, filter: filter, page: page)
                    #expect(read.events == all.filter(filter.matches), "\(filter), pages of \(page)")
                    // However little matched, the reader ends at the log's end.
                    #expect(read.reached == all.last?.cursor, "\(filter), pages of \(page)")
                }
            }
            // One read of a selective filter looks at a bounded stretch and
            // says how far: resuming there misses nothing.
            let first = try await log.events(bundleID: "com.example.app", after: nil,
                                             filter: EventFilter(campaignID: "none"), limit: 1)
            #expect(first.events.isEmpty)
            let reached = try #require(first.reached)
            #expect(reached <= all.last!.cursor)
        }
    }

    // MARK: retention and restarts

    @Test(arguments: StoreKind.all) func retentionDeletesOldEventsAndMovesTheWatermark(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let log = try Self.log(store)
            let day: Int64 = 86_400_000
            // Old: three messages of each bundle, created two days back.
            for i in 0..<6 {
                _ = try await store.schedule(makeMessage(
                    id: "old\(i)", bundleID: i < 3 ? "com.example.app" : "com.other.app", key: "old\(i)",
                    createdAt: now - 2 * day))
            }
            for i in 0..<3 { _ = try await store.schedule(makeMessage(id: "new\(i)", key: "new\(i)")) }
            let before = try await Self.drain(log, after: nil).events
            #expect(before.map(\.messageID) == ["old0", "old1", "old2", "new0", "new1", "new2"])
            // Hostile: nothing is old enough.
            #expect(try await log.pruneEvents(before: now - 3 * day, limit: 100) == 0)
            #expect(try await log.prunedEventCursor(bundleID: "com.example.app") == nil)
            // Bounded batches, oldest first, up to the first event not old.
            var deleted: [Int] = []
            for _ in 0..<10 {
                let n = try await log.pruneEvents(before: now - day, limit: 4)
                deleted.append(n)
                if n < 4 { break }
            }
            #expect(deleted == [4, 2])
            let after = try await Self.drain(log, after: nil).events
            #expect(after.map(\.messageID) == ["new0", "new1", "new2"])
            #expect(after == Array(before.suffix(3)))
            #expect(try await log.prunedEventCursor(bundleID: "com.example.app") == before[2].cursor)
            let otherHorizon = try #require(try await log.prunedEventCursor(bundleID: "com.other.app"))
            // A cursor before the watermark is out of range; the events
            // after it are intact, and new ones follow.
            #expect(before[0].cursor < before[2].cursor && otherHorizon < after[0].cursor)
            #expect(try await Self.drain(log, after: before[2].cursor).events == after)
            _ = try await store.schedule(makeMessage(id: "new3", key: "new3"))
            let later = try await Self.drain(log, after: after.last?.cursor).events
            #expect(later.map(\.messageID) == ["new3"] && later[0].cursor > after.last!.cursor)
        }
    }

    @Test(arguments: StoreKind.restartable) func aRestartKeepsTheLog(_ kind: StoreKind) async throws {
        try await withRestartableStore(kind) { store, restart in
            try await Self.seed(store)
            let before = try await Self.drain(try Self.log(store), after: nil).events
            let reopened = try await restart()
            let log = try Self.log(reopened)
            #expect(try await Self.drain(log, after: nil).events == before)
            #expect(try await log.latestEventCursor(bundleID: "com.example.app") == before.last?.cursor)
            _ = try await reopened.schedule(makeMessage(id: "after", key: "after"))
            let later = try await Self.drain(log, after: before.last?.cursor).events
            #expect(later.map(\.messageID) == ["after"])
        }
    }
}
