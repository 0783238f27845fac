import Foundation
import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// A Schedule whose caller gave up while it waited for SQLite's writer
/// (deadline passed, call cancelled) is dropped before its transaction: the
/// caller was told DEADLINE_EXCEEDED, so nothing may appear in the store.
/// These hold SQLite's writer to queue writes behind it; what every store
/// promises is in Contract/AbandonedWriteContractTests.swift.
@Suite("Abandoned writes", .timeLimit(.minutes(1)))
struct AbandonedWriteTests {
    @Test func pastDeadlineWhileQueuedIsNotStored() async throws {
        try await withStore { (store: SQLiteStore, _: String) async throws -> Void in
            let (gate, release) = await holdWriter(store)
            let late = makeMessage(key: "late")
            let kept = makeMessage(key: "kept")
            let deadline = ContinuousClock.now + .milliseconds(1)
            let lateWrite = Task { try await store.schedule(late, deadline: deadline) }
            let keptWrite = Task { try await store.schedule(kept, deadline: nil) }
            while store.writer.queuedCount < 2 { await Task.yield() }
            while ContinuousClock.now <= deadline { await Task.yield() }  // at most 1 ms
            release.signal()
            try await gate.value
            await #expect(throws: StoreError.abandoned) { try await lateWrite.value }
            _ = try await keptWrite.value
            #expect(try await store.message(id: late.id) == nil)
            #expect(try await store.message(id: kept.id) == kept)
        }
    }

    @Test func cancelledWhileQueuedIsNotStored() async throws {
        try await withStore { (store: SQLiteStore, _: String) async throws -> Void in
            let (gate, release) = await holdWriter(store)
            let message = makeMessage(key: "cancelled")
            let write = Task { try await store.schedule(message, deadline: .now + .seconds(3600)) }
            while store.writer.queuedCount < 1 { await Task.yield() }
            write.cancel()
            release.signal()
            try await gate.value
            await #expect(throws: StoreError.abandoned) { try await write.value }
            #expect(try await store.message(id: message.id) == nil)
            // The key is free: nothing of the abandoned write holds it.
            let again = makeMessage(key: "cancelled")
            guard case .scheduled(_, let superseded) = try await store.schedule(again) else {
                Issue.record("the key should be free")
                return
            }
            #expect(superseded == nil)
        }
    }

    // The callback form (the Schedule RPC's, no Task): the same rules.

    @Test func givenUpWhileQueuedThroughTheCallbackIsNotStored() async throws {
        try await withStore { (store: SQLiteStore, _: String) async throws -> Void in
            let (gate, release) = await holdWriter(store)
            let dropped = makeMessage(key: "given-up")
            let kept = makeMessage(key: "kept")
            let (results, sink) = AsyncStream<(String, Result<ScheduleOutcome, any Error>)>.makeStream()
            let giveUp = store.schedule(dropped, deadline: nil) { sink.yield(("dropped", $0)) }
            _ = store.schedule(kept, deadline: nil) { sink.yield(("kept", $0)) }
            while store.writer.queuedCount < 2 { await Task.yield() }
            giveUp()
            giveUp()  // twice is once
            release.signal()
            try await gate.value
            var seen: [String: Result<ScheduleOutcome, any Error>] = [:]
            for await (name, result) in results {
                seen[name] = result
                if seen.count == 2 { break }
            }
            #expect(throws: StoreError.abandoned) { try seen["dropped"]?.get() }
            guard case .scheduled(let stored, nil)? = try seen["kept"]?.get() else {
                Issue.record("kept: \(String(describing: seen["kept"]))")
                return
            }
            #expect(stored == kept)
            #expect(try await store.message(id: dropped.id) == nil)
            #expect(try await store.message(id: kept.id) == kept)
        }
    }
}
