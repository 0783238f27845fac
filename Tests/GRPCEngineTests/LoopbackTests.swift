import Foundation
import Logging
import Synchronization
import Testing
@testable import GRPCEngine

/// Starts a real server on 127.0.0.1:0 with test handlers.
final class TestServer: Sendable {
    let server: GRPCServer
    let port: Int
    let cancelled: AsyncStream<String>
    /// Yields when a `/test.Echo/Gated` call has entered its handler.
    let entered: AsyncStream<Void>
    /// Each `yield()` lets one `/test.Echo/Gated` call finish.
    let gate: AsyncStream<Void>.Continuation
    private let cancelledContinuation: AsyncStream<String>.Continuation
    /// Sends completed by `/test.Stream/Flood`.
    let sends: SendCounter
    /// Each `yield()` lets one `/test.Stream/UntilReleased` call say "bye" and return.
    let release: AsyncStream<Void>.Continuation
    /// The replies of `/test.Deferred/Hang` calls, never answered by the handler.
    let parked: ParkedReplies

    init(configure: (inout GRPCServerConfiguration) -> Void = { _ in }) async throws {
        var configuration = GRPCServerConfiguration()
        configuration.port = 0
        configuration.eventLoopThreads = 1
        configure(&configuration)
        var logger = Logger(label: "grpc-test")
        logger.logLevel = .warning
        let server = GRPCServer(configuration: configuration, logger: logger)
        let (stream, continuation) = AsyncStream<String>.makeStream()
        cancelled = stream
        cancelledContinuation = continuation
        let (gateStream, gateContinuation) = AsyncStream<Void>.makeStream()
        let (enteredStream, enteredContinuation) = AsyncStream<Void>.makeStream()
        entered = enteredStream
        let (releaseStream, releaseContinuation) = AsyncStream<Void>.makeStream()
        release = releaseContinuation
        gate = gateContinuation
        server.register("/test.Echo/Sync", .sync { $0.message })
        server.register("/test.Echo/Async", .async { request in
            await Task.yield()
            return Array(request.message.reversed())
        })
        server.register("/test.Echo/Metadata", .sync { request in
            let value = request.metadata["x-custom"] ?? "-"
            let binary = request.metadata.binaryValue("x-token-bin") ?? []
            return Array("\(value)|\(binary)|\(request.remoteAddress?.hasPrefix("127.0.0.1:") == true)".utf8)
        })
        server.register("/test.Echo/Fail", .sync { _ in throw GRPCStatus(.notFound, "no such thing: 100% gone") })
        server.register("/test.Echo/Crash", .async { _ in throw CocoaError(.fileNoSuchFile) })
        server.register("/test.Echo/Hang", .async { request in
            let key = request.metadata["x-key"] ?? ""
            enteredContinuation.yield()
            // Suspends until cancelled (deadline, RST_STREAM or connection loss).
            await withTaskCancellationHandler {
                let (never, _) = AsyncStream<Int>.makeStream()
                for await _ in never {}
            } onCancel: {
                continuation.yield(key)
            }
            throw CancellationError()
        })
        server.register("/test.Echo/Gated", .async { request in
            enteredContinuation.yield()
            for await _ in gateStream { break }  // one Gated call per server
            return request.message
        })
        server.register("/test.Echo/Deadline", .sync { request in
            Array((request.deadline == nil ? "none" : "set").utf8)
        })
        server.register("/test.Stream/Count", streaming: .serverStreaming { request, writer in
            let count = Int(String(decoding: request.message, as: UTF8.self)) ?? 0
            for index in 0..<count { try await writer.send(Array("item-\(index);".utf8)) }
        })
        server.register("/test.Stream/Echo", streaming: .bidirectional { _, requests, writer in
            for try await message in requests { try await writer.send(message) }
        })
        server.register("/test.Stream/FailAfterOne", streaming: .serverStreaming { _, writer in
            try await writer.send(Array("first".utf8))
            throw GRPCStatus(.notFound, "gone after one")
        })
        let sends = SendCounter()
        self.sends = sends
        server.register("/test.Stream/Flood", streaming: .serverStreaming { _, writer in
            for _ in 0..<64 {
                try await writer.send([UInt8](repeating: 7, count: 16 * 1024))
                sends.count.add(1, ordering: .relaxed)
            }
        })
        server.register("/test.Stream/Hang", streaming: .serverStreaming { request, writer in
            let key = request.metadata["x-key"] ?? ""
            // The key is reported however early the cancellation comes (even inside `send`).
            try await withTaskCancellationHandler {
                try await writer.send(Array("started".utf8))
                enteredContinuation.yield()
                let (never, _) = AsyncStream<Int>.makeStream()
                for await _ in never {}
                throw CancellationError()
            } onCancel: {
                continuation.yield(key)
            }
        })
        server.register("/test.Stream/UntilReleased", streaming: .serverStreaming { _, writer in
            try await writer.send(Array("started".utf8))
            enteredContinuation.yield()
            for await _ in releaseStream { break }  // one such call per server
            try await writer.send(Array("bye".utf8))
        })
        let parked = ParkedReplies()
        self.parked = parked
        // Deferred calls: answered from another thread, no Task. Requests over
        // 8 bytes start on the compute threads.
        server.register("/test.Deferred/Echo", .deferred(inlineBytes: 8) { request, reply in
            let reversed = Array(request.message.reversed())
            DispatchQueue.global().async {
                reply.answer(.success(reversed))
                reply.answer(.success(Array("second answer".utf8)))  // dropped
            }
        })
        server.register("/test.Deferred/OnLoop", .deferred(inlineBytes: 8) { request, reply in
            let message = request.message
            DispatchQueue.global().async { reply.answerOnLoop { message + Array("!".utf8) } }
        })
        server.register("/test.Deferred/Throw", .deferred(inlineBytes: 8) { _, _ in
            throw GRPCStatus(.notFound, "thrown before the reply was handed on")
        })
        server.register("/test.Deferred/Hang", .deferred(inlineBytes: 8) { request, reply in
            let key = request.metadata["x-key"] ?? ""
            reply.onCancel { continuation.yield(key) }
            parked.park(reply)
            enteredContinuation.yield()
        })
        // Methods anyone may call (`GRPCRouteLimits.unauthenticated`).
        server.register("/test.Open/Echo", .sync { $0.message }, limits: .unauthenticated)
        server.register("/test.Open/Watch", streaming: .serverStreaming { request, writer in
            let key = request.metadata["x-key"] ?? ""
            try await withTaskCancellationHandler {
                try await writer.send(Array("watching".utf8))
                let (never, _) = AsyncStream<Int>.makeStream()
                for await _ in never {}
                throw CancellationError()
            } onCancel: {
                continuation.yield(key)
            }
        }, limits: .unauthenticated)
        server.register("/test.Open/Reflect", streaming: .bidirectional { _, requests, writer in
            for try await message in requests { try await writer.send(message) }
        }, limits: .unauthenticated)
        self.server = server
        self.port = try await server.start().port
    }

    var base: String { "http://127.0.0.1:\(port)" }

    func stop() async { await server.shutdownGracefully(timeout: .seconds(5)) }
}

final class ParkedReplies: Sendable {
    let replies = Mutex<[GRPCReply]>([])
    func park(_ reply: GRPCReply) { replies.withLock { $0.append(reply) } }
}

final class SendCounter: Sendable {
    let count = Atomic<Int>(0)
}

/// Runs an nghttp2 command-line tool and returns its output (stdout + stderr, Latin-1).
func runTool(_ tool: String, _ arguments: [String], stdin: Data? = nil) async throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    let reader = Task.detached { pipe.fileHandleForReading.readDataToEndOfFile() }
    try process.run()
    let data = await reader.value
    process.waitUntilExit()
    return String(decoding: data.map { $0 < 0x80 ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
}

/// Writes a framed request body to a temp file for `nghttp -d`.
func requestFile(_ message: [UInt8]) throws -> String {
    let path = NSTemporaryDirectory() + "grpc-test-\(UUID().uuidString)"
    try Data(GRPCMessageFramer.frame(message)).write(to: URL(fileURLWithPath: path))
    return path
}

func nghttpCall(_ server: TestServer, _ path: String, message: [UInt8] = Array("hello".utf8),
                headers: [String] = []) async throws -> String {
    let file = try requestFile(message)
    defer { try? FileManager.default.removeItem(atPath: file) }
    var arguments = ["-v", "-t", "30", "-d", file, "-H", "content-type: application/grpc", "-H", "te: trailers"]
    for header in headers { arguments += ["-H", header] }
    arguments.append(server.base + path)
    return try await runTool("/usr/bin/nghttp", arguments)
}

/// Calls `path` once with `message` (nghttp, quiet) and returns the raw
/// response body bytes and what nghttp printed (empty when all went well).
func nghttpBody(_ server: TestServer, _ path: String, message: [UInt8]) async throws -> (body: [UInt8], output: String) {
    let file = try requestFile(message)
    defer { try? FileManager.default.removeItem(atPath: file) }
    let outputPath = file + ".out"
    defer { try? FileManager.default.removeItem(atPath: outputPath) }
    // The body goes to stdout, redirected through a shell to a file.
    let output = try await runTool("/bin/sh", [
        "-c", "/usr/bin/nghttp -t 20s -d '\(file)' -H 'content-type: application/grpc' '\(server.base)\(path)' > '\(outputPath)'",
    ])
    return (try [UInt8](Data(contentsOf: URL(fileURLWithPath: outputPath))), output)
}

@Suite("Loopback (real sockets, nghttp/h2load)", .serialized, .timeLimit(.minutes(1)))
struct LoopbackTests {
    @Test func syncEchoSucceeds() async throws {
        let server = try await TestServer()
        let output = try await nghttpCall(server, "/test.Echo/Sync", message: Array("hello-sync".utf8))
        #expect(output.contains(":status: 200"))
        #expect(output.contains("content-type: application/grpc"))
        #expect(output.contains("hello-sync"))
        #expect(output.contains("grpc-status: 0"))
        await server.stop()
    }

    @Test func asyncEchoSucceeds() async throws {
        let server = try await TestServer()
        let output = try await nghttpCall(server, "/test.Echo/Async", message: Array("abc".utf8))
        #expect(output.contains("cba"))
        #expect(output.contains("grpc-status: 0"))
        await server.stop()
    }

    @Test("large messages span many DATA frames both ways", arguments: ["/test.Echo/Sync", "/test.Echo/Async"])
    func largeMessageRoundTrip(path: String) async throws {
        let server = try await TestServer()
        let message = (0..<(3 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
        let (body, output) = try await nghttpBody(server, path, message: message)
        #expect(output.isEmpty, "\(output)")
        let expected = path.hasSuffix("Sync") ? message : Array(message.reversed())
        #expect(body == GRPCMessageFramer.frame(expected))
        await server.stop()
    }

    @Test func advertisesSettings() async throws {
        let server = try await TestServer { $0.maxConcurrentStreams = 77 }
        let output = try await nghttpCall(server, "/test.Echo/Sync")
        #expect(output.contains("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):77]"))
        #expect(output.contains("[SETTINGS_MAX_HEADER_LIST_SIZE(0x06):16384]"))
        await server.stop()
    }

    @Test func unknownMethodIsUnimplementedTrailersOnly() async throws {
        let server = try await TestServer()
        let output = try await nghttpCall(server, "/test.Echo/Nope")
        #expect(output.contains("grpc-status: 12"))
        #expect(output.contains("grpc-message: method not found: /test.Echo/Nope"))
        #expect(!output.contains("recv DATA frame"))
        await server.stop()
    }

    @Test func handlerStatusIsPercentEncoded() async throws {
        let server = try await TestServer()
        let output = try await nghttpCall(server, "/test.Echo/Fail")
        #expect(output.contains("grpc-status: 5"))
        #expect(output.contains("grpc-message: no such thing: 100%25 gone"))
        await server.stop()
    }

    @Test func nonStatusErrorIsInternalWithGenericMessage() async throws {
        let server = try await TestServer()
        let output = try await nghttpCall(server, "/test.Echo/Crash")
        #expect(output.contains("grpc-status: 13"))
        #expect(output.contains("grpc-message: internal error"))
        await server.stop()
    }

    @Test func metadataIncludingBinaryHeaders() async throws {
        let server = try await TestServer()
        let output = try await nghttpCall(
            server, "/test.Echo/Metadata", headers: ["x-custom: v1", "x-token-bin: AQID"])
        #expect(output.contains("v1|[1, 2, 3]|true"))
        await server.stop()
    }

    @Test func deadlineExceededCancelsTheHandler() async throws {
        let server = try await TestServer()
        let output = try await nghttpCall(server, "/test.Echo/Hang", headers: ["grpc-timeout: 50m", "x-key: d1"])
        #expect(output.contains("grpc-status: 4"))
        var iterator = server.cancelled.makeAsyncIterator()
        #expect(await iterator.next() == "d1")
        await server.stop()
        #expect(server.server.stats().rpcsInFlight == 0)
    }

    @Test("grpc-timeout handling", arguments: [("1S", "set"), ("99999999H", "set")])
    func validTimeoutSetsDeadline(header: String, expected: String) async throws {
        let server = try await TestServer()
        let output = try await nghttpCall(server, "/test.Echo/Deadline", headers: ["grpc-timeout: \(header)"])
        #expect(output.contains(expected))
        #expect(output.contains("grpc-status: 0"))
        await server.stop()
    }

    @Test func badTimeoutIsInvalidArgument() async throws {
        let server = try await TestServer()
        let output = try await nghttpCall(server, "/test.Echo/Deadline", headers: ["grpc-timeout: 5x"])
        #expect(output.contains("grpc-status: 3"))
        await server.stop()
    }

    @Test func nonGRPCContentTypeIs415() async throws {
        let server = try await TestServer()
        let file = try requestFile([])
        defer { try? FileManager.default.removeItem(atPath: file) }
        let output = try await runTool("/usr/bin/nghttp", [
            "-v", "-t", "10", "-d", file, "-H", "content-type: application/json", server.base + "/test.Echo/Sync",
        ])
        #expect(output.contains(":status: 415"))
        await server.stop()
    }

    @Test func clientGoingAwayCancelsTheAsyncHandler() async throws {
        let server = try await TestServer()
        // nghttp gives up after 300 ms and drops the stream/connection; the handler's Task is cancelled.
        let file = try requestFile([1])
        defer { try? FileManager.default.removeItem(atPath: file) }
        _ = try await runTool("/usr/bin/nghttp", [
            "-t", "300ms", "-d", file, "-H", "content-type: application/grpc", "-H", "x-key: gone",
            server.base + "/test.Echo/Hang",
        ])
        var iterator = server.cancelled.makeAsyncIterator()
        #expect(await iterator.next() == "gone")
        await server.stop()
        #expect(server.server.stats().rpcsInFlight == 0)
    }

    @Test func gracefulShutdownLetsInFlightCallsFinish() async throws {
        let server = try await TestServer()
        let call = Task { try await nghttpCall(server, "/test.Echo/Gated", message: Array("drained".utf8)) }
        var entered = server.entered.makeAsyncIterator()
        await entered.next()
        let shutdown = Task { await server.server.shutdownGracefully(timeout: .seconds(10)) }
        server.gate.yield()
        let output = try await call.value
        await shutdown.value
        #expect(output.contains("drained"))
        #expect(output.contains("grpc-status: 0"))
        #expect(server.server.isDraining)
        #expect(server.server.stats().connectionsOpen == 0)
    }

    @Test func shutdownTimeoutCancelsStuckCalls() async throws {
        let server = try await TestServer()
        let file = try requestFile([1])
        defer { try? FileManager.default.removeItem(atPath: file) }
        let call = Task {
            try await runTool("/usr/bin/nghttp", [
                "-v", "-t", "10", "-d", file, "-H", "content-type: application/grpc", "-H", "x-key: stuck",
                server.base + "/test.Echo/Hang",
            ])
        }
        // Wait until the call is in flight, then shut down with a short bound.
        var entered = server.entered.makeAsyncIterator()
        await entered.next()
        await server.server.shutdownGracefully(timeout: .milliseconds(200))
        var iterator = server.cancelled.makeAsyncIterator()
        #expect(await iterator.next() == "stuck")
        let output = try await call.value
        #expect(output.contains("GOAWAY"))
        #expect(server.server.stats().connectionsOpen == 0)
    }

    @Test("RST_STREAM cancels the handler (async: its Task; deferred: its onCancel) and nothing is written",
          arguments: ["/test.Echo/Hang", "/test.Deferred/Hang"])
    func rstStreamCancelsTheHandlerAndWritesNothing(path: String) async throws {
        let server = try await TestServer()
        let client = try RawHTTP2Client(port: server.port)
        client.sendRequestHeaders(streamID: 1, path: path, extra: [("x-key", "rst")])
        client.sendMessage(streamID: 1, [1, 2, 3])
        var entered = server.entered.makeAsyncIterator()
        await entered.next()
        client.sendReset(streamID: 1)
        var cancelled = server.cancelled.makeAsyncIterator()
        #expect(await cancelled.next() == "rst")
        // A deferred call's late answer is dropped.
        for reply in server.parked.replies.withLock({ $0 }) {
            #expect(reply.isCancelled)
            reply.answer(.success(Array("after the reset".utf8)))
        }
        // The connection still serves; stream 1 never got HEADERS or DATA.
        client.sendRequestHeaders(streamID: 3, path: "/test.Echo/Sync")
        client.sendMessage(streamID: 3, Array("after".utf8))
        var sawStream3Trailers = false
        while !sawStream3Trailers, let frame = client.readFrame() {
            #expect(!(frame.streamID == 1 && (frame.type == 0 || frame.type == 1)))
            if frame.streamID == 3, frame.type == 1, frame.flags & 0x1 != 0 { sawStream3Trailers = true }
        }
        #expect(sawStream3Trailers)
        client.disconnect()
        await server.stop()
        #expect(server.server.stats().rpcsInFlight == 0)
    }

    @Test func streamsBeyondTheLimitAreRefused() async throws {
        let server = try await TestServer { $0.maxConcurrentStreams = 2 }
        let client = try RawHTTP2Client(port: server.port)
        // Three calls that stay open (no END_STREAM), sent before reading the server's SETTINGS.
        for id: UInt32 in [1, 3, 5] {
            client.sendRequestHeaders(streamID: id, path: "/test.Echo/Sync")
        }
        var refused: [UInt32] = []
        var advertised: UInt32?
        while refused.isEmpty || advertised == nil, let frame = client.readFrame() {
            if frame.type == 3 {
                let code = frame.payload.reduce(0) { $0 << 8 | UInt32($1) }
                if code == 7 { refused.append(frame.streamID) }  // REFUSED_STREAM
            } else if frame.type == 4, frame.flags & 0x1 == 0 {
                for offset in stride(from: 0, to: frame.payload.count, by: 6)
                where frame.payload[offset] == 0 && frame.payload[offset + 1] == 3 {
                    advertised = frame.payload[(offset + 2)...(offset + 5)].reduce(0) { $0 << 8 | UInt32($1) }
                }
            }
        }
        #expect(advertised == 2)
        #expect(refused == [5])
        client.disconnect()
        await server.stop()
    }

    @Test func garbagePrefaceClosesTheConnection() async throws {
        let server = try await TestServer()
        let client = try RawHTTP2Client(port: server.port)  // sends a valid preface; now a broken frame:
        client.send(Array(repeating: 0xFF, count: 64))
        var frames = 0
        while client.readFrame() != nil { frames += 1 }  // runs until EOF
        #expect(frames < 10)
        let output = try await nghttpCall(server, "/test.Echo/Sync", message: Array("still".utf8))
        #expect(output.contains("grpc-status: 0"))
        await server.stop()
    }

    @Test("h2load: many concurrent calls all succeed", arguments: ["/test.Echo/Sync", "/test.Echo/Async"])
    func h2loadManyCallsAllSucceed(path: String) async throws {
        let server = try await TestServer()
        let file = try requestFile(Array("ping".utf8))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let output = try await runTool("/usr/bin/h2load", [
            "-n", "2000", "-c", "4", "-m", "16", "-d", file,
            "-H", "content-type: application/grpc", "-H", "te: trailers", server.base + path,
        ])
        #expect(output.contains("2000 succeeded"), "\(output)")
        #expect(server.server.stats().rpcsTotal == 2000)
        await server.stop()
        #expect(server.server.stats() == GRPCServerStats(connectionsOpen: 0, rpcsInFlight: 0, rpcsTotal: 2000))
    }
}
