import Foundation
import Testing
@testable import GRPCEngine

/// `.deferred` handlers: started on the loop (or the compute threads past
/// `inlineBytes`), answered once from any thread, cancelled like async ones.
@Suite("Deferred calls (real sockets, nghttp)", .serialized, .timeLimit(.minutes(1)))
struct DeferredCallTests {
    @Test func anAnswerThatNeverComesEndsAtTheDeadlineAndRunsOnCancel() async throws {
        let server = try await TestServer()
        let output = try await nghttpCall(server, "/test.Deferred/Hang", headers: ["grpc-timeout: 50m", "x-key: late"])
        #expect(output.contains("grpc-status: 4"))
        var cancelled = server.cancelled.makeAsyncIterator()
        #expect(await cancelled.next() == "late")
        // Answering after the call ended sends nothing and breaks nothing.
        for reply in server.parked.replies.withLock({ $0 }) {
            reply.answer(.success(Array("too late".utf8)))
            reply.answerOnLoop { Array("too late".utf8) }
        }
        let after = try await nghttpCall(server, "/test.Deferred/Echo", message: Array("ok".utf8))
        #expect(after.contains("ko"))
        #expect(after.contains("grpc-status: 0"))
        await server.stop()
        #expect(server.server.stats().rpcsInFlight == 0)
    }

    // RST_STREAM: LoopbackTests.rstStreamCancelsTheHandlerAndWritesNothing.

    @Test func aThrowBeforeTheReplyIsHandedOnIsTheStatus() async throws {
        let server = try await TestServer()
        let output = try await nghttpCall(server, "/test.Deferred/Throw", message: [1])
        #expect(output.contains("grpc-status: 5"))
        #expect(output.contains("thrown before the reply"))
        await server.stop()
    }

    @Test("answered from another thread; the second answer is dropped",
          arguments: [Array("abc".utf8), (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }])
    func answeredFromAnotherThread(message: [UInt8]) async throws {
        // 3 bytes start on the loop, 100,000 on the compute threads.
        let server = try await TestServer()
        let (body, output) = try await nghttpBody(server, "/test.Deferred/Echo", message: message)
        #expect(output.isEmpty, "\(output)")
        #expect(body == GRPCMessageFramer.frame(Array(message.reversed())))
        await server.stop()
        #expect(server.server.stats().rpcsInFlight == 0)
    }

    @Test func answerOnLoopRunsTheLastStepOnTheLoop() async throws {
        let server = try await TestServer()
        let output = try await nghttpCall(server, "/test.Deferred/OnLoop", message: Array("hi".utf8))
        #expect(output.contains("hi!"))
        #expect(output.contains("grpc-status: 0"))
        await server.stop()
    }

    @Test func manyConcurrentDeferredCallsAllSucceed() async throws {
        let server = try await TestServer { $0.eventLoopThreads = 2 }
        let file = try requestFile(Array("abc".utf8))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let output = try await runTool("/usr/bin/h2load", [
            "-n", "4000", "-c", "8", "-m", "16", "-d", file, "-H", "content-type: application/grpc",
            "-H", "te: trailers", server.base + "/test.Deferred/Echo",
        ])
        #expect(output.contains("4000 succeeded"), "\(output)")
        await server.stop()
        #expect(server.server.stats().rpcsInFlight == 0)
    }
}
