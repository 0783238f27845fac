import HeraldStorage
import HeraldTestSupport
import Testing

@testable import HeraldService

/// The hand-over log's writes run in `run()` (owned by the delivery
/// service), not in a task per batch.
@Suite("Hand-over log", .timeLimit(.minutes(1)))
struct HandOverLogTests {
    static func mark(_ log: HandOverLog, token: String) async -> (any Error)? {
        await withCheckedContinuation { continuation in
            let hook = log.hook(messageID: "m1", deviceToken: token, push: 7)
            hook { continuation.resume(returning: $0) }
        }
    }

    @Test("a mark queued after finish() is refused at once; run() returns after writing what was queued")
    func finishRefusesLaterMarks() async throws {
        let store = InMemoryStore()
        let log = HandOverLog(store: store, clock: ManualClock(now: 1_000))
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await log.run() }
            #expect(await Self.mark(log, token: "a") == nil)  // done fires only once written
            let written = try await store.handOvers(messageID: "m1", push: 7)
            #expect(written == ["a"])
            log.finish()
        }
        let late = await Self.mark(log, token: "b")
        #expect(late is HandOverLog.Finished)
        #expect(try await store.handOvers(messageID: "m1", push: 7) == ["a"])
    }

    @Test("marks from many requests are all written, each before its done fires")
    func concurrentMarksAreWritten() async throws {
        let store = InMemoryStore()
        let log = HandOverLog(store: store, clock: ManualClock(now: 1_000))
        let tokens = (0..<50).map { "t\($0)" }
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await log.run() }
            try await withThrowingTaskGroup(of: Void.self) { marks in
                for token in tokens {
                    marks.addTask {
                        #expect(await Self.mark(log, token: token) == nil)
                        let written = try await store.handOvers(messageID: "m1", push: 7)
                        #expect(written.contains(token))
                    }
                }
                try await marks.waitForAll()
            }
            log.finish()
        }
        #expect(try await store.handOvers(messageID: "m1", push: 7).sorted() == tokens.sorted())
    }
}
