import CInterop
import Foundation
import Testing

@testable import GRPCEngine

/// What a caller without a token can hold (issue 24 item 3): routes
/// registered with `GRPCRouteLimits.unauthenticated` (`/test.Open/…`) take
/// small messages from their own buffer budget, their streaming calls are
/// bounded in number and age and keep no connection out of the idle timeout,
/// and one peer address holds a bounded number of connections. Real sockets
/// on loopback; nested in the serialized loopback suite (the blocking clients
/// hold a cooperative thread).
extension LoopbackTests {
@Suite("Limits against unauthenticated clients (real sockets)", .timeLimit(.minutes(1)))
struct UnauthenticatedLimitsTests {
    /// A declared message of `declared` bytes of which `sent` body bytes are sent.
    static func partial(declared: Int, sent: Int) -> [UInt8] {
        [0, UInt8(declared >> 24 & 0xFF), UInt8(declared >> 16 & 0xFF), UInt8(declared >> 8 & 0xFF),
         UInt8(declared & 0xFF)] + [UInt8](repeating: 0, count: sent)
    }

    @Test func slowUnauthenticatedBodiesFillOnlyTheirOwnBudget() async throws {
        let server = try await TestServer {
            $0.unauthenticatedMaxBufferedBytes = 200_000
            $0.maxBufferedBytes = 4 << 20
        }
        // The attacker: three connections each holding 60 KB of an unfinished
        // Health-like body (under the 64 KiB message limit).
        var holders: [H2LoopbackClient] = []
        for _ in 0..<3 {
            let client = try H2LoopbackClient(port: server.port)
            let stream = try client.start("/test.Open/Echo", body: Self.partial(declared: 60_000, sent: 59_000), open: true)
            #expect(client.sync())
            #expect(client.recorder.closed[stream] == nil, "held, not refused")
            holders.append(client)
        }
        #expect(server.server.stats().unauthenticatedBufferedBytes == 3 * 59_005)
        // A fourth would pass the 200,000-byte budget: refused, naming it.
        let fourth = try H2LoopbackClient(port: server.port)
        let refused = try fourth.start("/test.Open/Echo", body: Self.partial(declared: 60_000, sent: 59_000), open: true)
        #expect(fourth.wait(refused))
        #expect(fourth.grpcStatus(refused) == 8)
        #expect(fourth.grpcMessage(refused).contains("200000 bytes for methods callable without a token"))
        #expect(fourth.grpcMessage(refused).contains("unauthenticatedMaxBufferedBytes"))
        // An admitted route still has the whole server budget: a 1 MiB call succeeds.
        let message = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let admitted = try fourth.call("/test.Echo/Sync", message: message)
        #expect(fourth.wait(admitted))
        #expect(fourth.grpcStatus(admitted) == 0)
        #expect(fourth.recorder.data[admitted] == GRPCMessageFramer.frame(message))
        #expect(server.server.stats().bufferedRequestBytes == 0)
        // Closing the holders gives their bytes back.
        for holder in holders { holder.disconnect() }
        let deadline = ContinuousClock.now + .seconds(10)
        while server.server.stats().unauthenticatedBufferedBytes != 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(server.server.stats().unauthenticatedBufferedBytes == 0)
        let after = try fourth.call("/test.Open/Echo", message: [UInt8](repeating: 1, count: 60_000))
        #expect(fourth.wait(after))
        #expect(fourth.grpcStatus(after) == 0)
        fourth.disconnect()
        await server.stop()
    }

    @Test func oversizedUnauthenticatedMessageIsRefusedNamingTheLimit() async throws {
        let server = try await TestServer()
        let client = try H2LoopbackClient(port: server.port)
        // Declared 100,000 bytes: refused from the prefix, before the body is buffered.
        let big = try client.start("/test.Open/Echo", body: Self.partial(declared: 100_000, sent: 1_000), open: true)
        #expect(client.wait(big))
        #expect(client.grpcStatus(big) == 8)
        #expect(client.grpcMessage(big).contains("exceeds the limit of 65536 bytes for methods callable without a token"))
        // Streaming routes of the class too.
        let watch = try client.start("/test.Open/Reflect", body: Self.partial(declared: 70_000, sent: 10), open: true)
        #expect(client.wait(watch))
        #expect(client.grpcStatus(watch) == 8)
        // Just under the limit is served; an admitted route takes far more.
        let fits = try client.call("/test.Open/Echo", message: [UInt8](repeating: 2, count: 65_536))
        #expect(client.wait(fits))
        #expect(client.grpcStatus(fits) == 0)
        let admitted = try client.call("/test.Echo/Sync", message: [UInt8](repeating: 3, count: 100_000))
        #expect(client.wait(admitted))
        #expect(client.grpcStatus(admitted) == 0)
        client.disconnect()
        await server.stop()
    }

    @Test func onePeerPastTheConnectionCapIsRefusedWhileAnotherConnects() async throws {
        let server = try await TestServer { $0.maxConnectionsPerPeer = 2 }
        let first = try RawHTTP2Client(port: server.port)
        let second = try RawHTTP2Client(port: server.port)
        #expect(first.sync() != nil)
        #expect(second.sync() != nil)
        // The same address once more: closed on accept.
        let third = try RawHTTP2Client(port: server.port)
        #expect(third.sync() == nil, "a third connection from 127.0.0.1 is refused")
        // Another address is another peer.
        let other = try RawHTTP2Client(port: server.port, from: "127.0.0.2")
        #expect(other.sync() != nil, "127.0.0.2 still connects")
        #expect(server.server.stats().connectionsOpen == 3)
        // A slot of 127.0.0.1 comes back when one of its connections closes.
        first.disconnect()
        let deadline = ContinuousClock.now + .seconds(10)
        var served = false
        while !served, ContinuousClock.now < deadline {
            served = try RawHTTP2Client(port: server.port).sync() != nil
        }
        #expect(served)
        second.disconnect()
        other.disconnect()
        await server.stop()
    }

    @Test func watchStreamsPastTheBoundsAreRefused() async throws {
        let server = try await TestServer {
            $0.unauthenticatedMaxStreamsPerConnection = 2
            $0.unauthenticatedMaxStreams = 3
        }
        let a = try H2LoopbackClient(port: server.port)
        let a1 = try a.call("/test.Open/Watch", message: [])
        let a2 = try a.call("/test.Open/Watch", message: [])
        #expect(a.pump { a.recorder.data[a1] != nil && a.recorder.data[a2] != nil })
        let a3 = try a.call("/test.Open/Watch", message: [])
        #expect(a.wait(a3))
        #expect(a.grpcStatus(a3) == 8)
        #expect(a.grpcMessage(a3).contains("limit 2 (unauthenticatedMaxStreamsPerConnection)"))
        // Unary calls of the class and admitted streams are not counted.
        let check = try a.call("/test.Open/Echo", message: [1])
        #expect(a.wait(check))
        #expect(a.grpcStatus(check) == 0)
        let b = try H2LoopbackClient(port: server.port)
        let b1 = try b.call("/test.Open/Watch", message: [])
        #expect(b.pump { b.recorder.data[b1] != nil })
        let b2 = try b.call("/test.Open/Watch", message: [])
        #expect(b.wait(b2))
        #expect(b.grpcStatus(b2) == 8)
        #expect(b.grpcMessage(b2).contains("limit 3 (unauthenticatedMaxStreams)"))
        #expect(server.server.stats().unauthenticatedStreams == 3)
        // A slot comes back when a watch ends.
        try a.session.submitRSTStream(streamID: a1, errorCode: NGHTTP2_CANCEL)
        #expect(a.wait(a1))
        #expect(a.sync())
        let b3 = try b.call("/test.Open/Watch", message: [])
        #expect(b.pump { b.recorder.data[b3] != nil })
        a.disconnect()
        b.disconnect()
        await server.stop()
        #expect(server.server.stats().unauthenticatedStreams == 0)
    }

    @Test func watchStreamPastItsAgeIsEndedWithUnavailable() async throws {
        let server = try await TestServer { $0.unauthenticatedMaxStreamAge = .milliseconds(300) }
        let client = try H2LoopbackClient(port: server.port)
        let watch = try client.call("/test.Open/Watch", message: [], extra: [("x-key", "aged")])
        #expect(client.wait(watch))
        #expect(String(decoding: client.recorder.data[watch] ?? [], as: UTF8.self).contains("watching"))
        #expect(client.grpcStatus(watch) == 14)
        #expect(client.grpcMessage(watch).contains("maximum age"))
        var cancelled = server.cancelled.makeAsyncIterator()
        #expect(await cancelled.next() == "aged", "the handler is cancelled")
        // The connection still serves.
        let check = try client.call("/test.Open/Echo", message: [1])
        #expect(client.wait(check))
        #expect(client.grpcStatus(check) == 0)
        client.disconnect()
        await server.stop()
        #expect(server.server.stats().unauthenticatedStreams == 0)
    }

    @Test func watchStreamAloneDoesNotKeepTheConnectionOutOfTheIdleTimeout() async throws {
        let server = try await TestServer { $0.idleTimeout = .milliseconds(300) }
        let client = try H2LoopbackClient(port: server.port)
        let watch = try client.call("/test.Open/Watch", message: [])
        // The idle timeout ends the watch with a status, then GOAWAY and close.
        #expect(client.wait(watch))
        #expect(client.grpcStatus(watch) == 14)
        #expect(client.grpcMessage(watch).contains("idle"))
        _ = client.pump { client.recorder.goaways > 0 }
        #expect(client.recorder.goaways > 0)
        client.disconnect()
        // An admitted streaming call is activity: its connection stays. A
        // connection opened after it, with no call, is the clock: once that
        // one got its GOAWAY, the busy one has been past the timeout too.
        let busy = try H2LoopbackClient(port: server.port)
        let held = try busy.call("/test.Stream/Hang", message: [])
        #expect(busy.pump { busy.recorder.data[held] != nil })
        let plain = try H2LoopbackClient(port: server.port)
        #expect(plain.sync())
        _ = plain.pump { plain.recorder.goaways > 0 }
        #expect(plain.recorder.goaways > 0)
        #expect(busy.sync())
        #expect(busy.recorder.goaways == 0)
        #expect(busy.recorder.closed[held] == nil)
        plain.disconnect()
        busy.disconnect()
        await server.stop()
    }
}
}
