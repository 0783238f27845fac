import Foundation
import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// Schedule's first events and live keys (`MessageInsertBatch`): one
/// INSERT … SELECT each per flush copies them from the `messages` rows the
/// flush just wrote (rowids above the largest before it). Each case checks the whole log through the
/// read API: one event per stored message, its columns the message's, in the
/// batch's order — through the gathered path, the mid-batch flush of a
/// repeated key, the row-by-row fallback after a failed INSERT, and a flush
/// right after retention deleted the row with the largest rowid.
@Suite("Schedule's events and keys copied from the inserted rows", .timeLimit(.minutes(1)))
struct ScheduleEventCopyTests {
    /// What an event says, without its cursor (compared in log order).
    struct Entry: Equatable, CustomStringConvertible {
        var kind: EventKind
        var at: Int64
        var messageID: String
        var key: String?
        var userID: String
        var campaignID: String
        var platform: Platform

        init(_ kind: EventKind, _ m: StoredMessage, at: Int64? = nil) {
            self.kind = kind
            self.at = at ?? m.createdAt
            messageID = m.id
            key = m.idempotencyKey
            userID = m.userID
            campaignID = m.campaignID
            platform = m.platform
        }

        init(_ e: DeliveryEvent) {
            kind = e.kind
            at = e.at
            messageID = e.messageID
            key = e.idempotencyKey
            userID = e.userID
            campaignID = e.campaignID
            platform = e.platform
        }

        var description: String { "\(kind.rawValue) \(messageID) \(at) \(key ?? "-") \(userID) \(campaignID) \(platform)" }
    }

    /// Every event of `bundleID` after `cursor`, in order (device-level
    /// fields must be empty: these are message events).
    static func log(_ store: SQLiteStore, _ bundleID: String, after cursor: EventCursor? = nil) async throws -> [DeliveryEvent] {
        let page = try await store.events(bundleID: bundleID, after: cursor, filter: EventFilter(), limit: 10_000)
        for event in page.events {
            #expect(event.bundleID == bundleID)
            #expect(event.deviceToken == nil && event.reason == nil && event.httpStatus == nil)
        }
        #expect(page.events.map(\.cursor) == page.events.map(\.cursor).sorted())
        return page.events
    }

    @Test func everyRowOfAMixedBatchGetsItsOwnEventInBatchOrder() async throws {
        try await withStore { store, _ in
            // 127 rows (every chunk size), two bundles, both platforms, rows
            // without a key, distinct creation times, users and campaigns;
            // row 60 repeats row 11's key: the batch flushes there, and the
            // first is superseded between the two flushes.
            let bundles = ["com.example.app", "com.example.other"]
            var messages: [StoredMessage] = []
            for index in 0..<127 {
                let bundleID = bundles[index % 3 == 0 ? 1 : 0]
                let platform: Platform = index % 2 == 0 ? .ios : .android
                let key: String? = index % 5 == 0 ? nil : "k\(index)"
                messages.append(makeMessage(
                    bundleID: bundleID, platform: platform, userID: "user-\(index % 7)",
                    campaignID: "campaign-\(index % 4)", key: key, createdAt: now + Int64(index)))
            }
            messages[60] = makeMessage(
                bundleID: messages[11].bundleID, userID: "user-60", campaignID: "campaign-60", key: messages[11].idempotencyKey,
                createdAt: now + 60)
            let results = try await InsertBatchTests.oneBatch(store, messages.map { message in
                { try await store.schedule(message) }
            })
            for (index, result) in results.enumerated() {
                #expect(try result.get() == .scheduled(messages[index], supersededID: index == 60 ? messages[11].id : nil))
            }
            for bundle in bundles {
                var expected: [Entry] = []
                for (index, message) in messages.enumerated() where message.bundleID == bundle {
                    if index == 60 { expected.append(Entry(.superseded, messages[11], at: message.createdAt)) }
                    expected.append(Entry(.scheduled, message))
                }
                #expect(try await Self.log(store, bundle).map(Entry.init) == expected)
            }
            let total = try store.read { db in try db.scalarInt("SELECT count(*) FROM events") }
            #expect(total == 128)
        }
    }

    @Test func importedStatesAreTheirFirstEvents() async throws {
        try await withStore { store, _ in
            let messages = MessageState.allCases.map { makeMessage(key: "k-\($0.rawValue)", state: $0) }
            try await store.importMessages(messages)
            let expected = try messages.map { message in
                Entry(try #require(EventKind(rawValue: message.state.rawValue)), message)
            }
            #expect(try await Self.log(store, "com.example.app").map(Entry.init) == expected)
        }
    }

    @Test func aFailedInsertRunRowByRowGivesEachStoredMessageOneEvent() async throws {
        try await withStore { store, _ in
            // The multi-row INSERT fails on a repeated id (after some events
            // of an earlier chunk may have been written in the transaction):
            // the batch is rolled back and run again job by job; the
            // duplicate fails alone and has no event of its own.
            let messages = (0..<40).map { makeMessage(key: "k\($0)", createdAt: now + Int64($0)) }
            var duplicate = makeMessage(key: "dup", createdAt: now + 99)
            duplicate.id = messages[7].id
            let all = Array(messages[..<20]) + [duplicate] + Array(messages[20...])
            let results = try await InsertBatchTests.oneBatch(store, all.map { message in
                { try await store.schedule(message) }
            })
            #expect(results.filter { (try? $0.get()) == nil }.count == 1)
            #expect(try await Self.log(store, "com.example.app").map(Entry.init) == messages.map { Entry(.scheduled, $0) })
        }
    }

    @Test func aFlushAfterRetentionDeletedTheLastRowCopiesOnlyItsOwnRows() async throws {
        try await withStore { store, _ in
            // The finished message is the row with the largest rowid;
            // retention deletes it, so the next rows take rowids from the
            // same place: the copy must find exactly them, once each.
            let early = makeMessage(key: "early", createdAt: now - 10)
            _ = try await store.schedule(early)
            let finished = makeMessage(key: "finished", state: .failed, createdAt: now - 5)
            try await store.importMessages([finished])
            let before = try await Self.log(store, "com.example.app")
            #expect(before.map(Entry.init) == [Entry(.scheduled, early), Entry(.failed, finished)])
            #expect(try await store.pruneFinished(before: now, limit: 10) == PruneBatch(messages: 1, outcomes: 0))
            let later = (0..<5).map { makeMessage(key: "later-\($0)", createdAt: now + Int64($0)) }
            let results = try await InsertBatchTests.oneBatch(store, later.map { message in
                { try await store.schedule(message) }
            })
            #expect(try results.map { try $0.get() } == later.map { .scheduled($0, supersededID: nil) })
            let after = try await Self.log(store, "com.example.app", after: before.last?.cursor)
            #expect(after.map(Entry.init) == later.map { Entry(.scheduled, $0) })
            // The events before are untouched (the deleted message's included).
            #expect(Array(try await Self.log(store, "com.example.app").prefix(2)) == before)
        }
    }

    @Test func theLiveKeysAreTheCopiedRowsPerBundle() async throws {
        try await withStore { store, _ in
            // The same key string in two bundles, rows without a key between
            // them, and an import carrying one key twice (one flush: the
            // later row's is live, as with the multi-row upsert before).
            let a = makeMessage(bundleID: "com.example.a", key: "same"), b = makeMessage(bundleID: "com.example.b", key: "same")
            let unkeyed = (0..<3).map { _ in makeMessage(bundleID: "com.example.a", key: nil) }
            let results = try await InsertBatchTests.oneBatch(store, ([a] + unkeyed + [b]).map { message in
                { try await store.schedule(message) }
            })
            #expect(results.allSatisfy { (try? $0.get()) != nil })
            #expect(try await store.message(bundleID: "com.example.a", idempotencyKey: "same")?.id == a.id)
            #expect(try await store.message(bundleID: "com.example.b", idempotencyKey: "same")?.id == b.id)
            let older = makeMessage(key: "twice", state: .superseded, createdAt: now - 2)
            let newer = makeMessage(key: "twice", createdAt: now - 1)
            try await store.importMessages([older, newer])
            #expect(try await store.message(bundleID: newer.bundleID, idempotencyKey: "twice")?.id == newer.id)
            let keys = try store.read { db in try db.scalarInt("SELECT count(*) FROM message_keys") }
            #expect(keys == 3)
        }
    }
}
