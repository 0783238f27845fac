import Foundation
import HeraldCore
import Testing
@testable import HeraldStorage

/// Abandoned writes on every store: a Schedule whose caller has given up
/// (deadline passed, call cancelled) is not stored — the caller was told
/// DEADLINE_EXCEEDED, so nothing may appear — through the awaited form and
/// the callback form (the Schedule RPC's one path) alike. SQLite's cases
/// that hold its writer to queue writes behind it stay in AbandonedWriteTests.
@Suite("Store contract: abandoned writes", .storeCaseLimit)
struct AbandonedWriteContractTests {
    @Test(arguments: StoreKind.all) func deadlineAlreadyPastIsNotStored(_ kind: StoreKind) async throws {
        try await withStore(kind) { (store: any ContractStore) async throws -> Void in
            let message = makeMessage(key: "expired")
            await #expect(throws: StoreError.abandoned) {
                try await store.schedule(message, deadline: .now - .seconds(1))
            }
            #expect(try await store.message(id: message.id) == nil)
        }
    }

    @Test(arguments: StoreKind.all) func aCancelledCallerIsNotStored(_ kind: StoreKind) async throws {
        try await withStore(kind) { (store: any ContractStore) async throws -> Void in
            let message = makeMessage(key: "cancelled-first")
            let write = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await store.schedule(message, deadline: .now + .seconds(3600))
            }
            await #expect(throws: StoreError.abandoned) { try await write.value }
            #expect(try await store.message(id: message.id) == nil)
            // The key is free: nothing of the abandoned write holds it.
            guard case .scheduled(_, nil) = try await store.schedule(makeMessage(key: "cancelled-first")) else {
                Issue.record("the key should be free")
                return
            }
        }
    }

    // The callback form (the Schedule RPC's): the same rules.

    @Test(arguments: StoreKind.all)
    func aSpentKeyThroughTheCallbackIsAlreadyExistsAndAPastDeadlineIsAbandoned(_ kind: StoreKind) async throws {
        try await withStore(kind) { (store: any ContractStore) async throws -> Void in
            let first = makeMessage(key: "k")
            _ = try await store.schedule(first)
            _ = try await store.claim(id: first.id, from: .scheduled, now: 1)
            let (results, sink) = AsyncStream<(String, Result<ScheduleOutcome, any Error>)>.makeStream()
            _ = store.schedule(makeMessage(key: "k"), deadline: nil) { sink.yield(("spent", $0)) }
            _ = store.schedule(makeMessage(key: "late"), deadline: .now - .seconds(1)) { sink.yield(("late", $0)) }
            var seen: [String: Result<ScheduleOutcome, any Error>] = [:]
            for await (name, result) in results {
                seen[name] = result
                if seen.count == 2 { break }
            }
            guard case .alreadyExists(let existing)? = try seen["spent"]?.get() else {
                Issue.record("a spent key must be ALREADY_EXISTS")
                return
            }
            #expect(existing.id == first.id)
            #expect(throws: StoreError.abandoned) { try seen["late"]?.get() }
        }
    }
}
