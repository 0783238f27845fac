import NIOCore
import Synchronization
import Testing
@testable import GRPCEngine

/// `GRPCServerConfiguration.connectionPrologue` (how TLS goes in front of the
/// HTTP/2 handler): its handlers see every connection, a throw closes that
/// connection only, and the handshake timeout still bounds a connection
/// whose prologue never lets a byte through (a TLS handshake never finished).
@Suite struct ConnectionPrologueTests {
    @Test("a prologue that never passes a byte on is still closed by the handshake timeout")
    func swallowingPrologueIsBoundedByTheHandshakeTimeout() async throws {
        let accepted = Atomic<Int>(0)
        let server = try await TestServer { configuration in
            configuration.handshakeTimeout = .milliseconds(300)
            configuration.connectionPrologue = { channel in
                accepted.add(1, ordering: .relaxed)
                try channel.pipeline.syncOperations.addHandler(Swallower())
            }
        }
        let client = try RawHTTP2Client(port: server.port)  // sends a whole preface: swallowed
        // Accepted, then closed by the server while the client still holds
        // it (polling for the open count to reach 1 could miss a connection
        // that lived only the 300 ms on a loaded machine).
        try await pollUntil { accepted.load(ordering: .relaxed) == 1 }
        try await pollUntil { server.server.stats().connectionsOpen == 0 }
        client.disconnect()
        await server.stop()
    }

    @Test("a throwing prologue closes its connection; the next connection is served")
    func throwingPrologueClosesOnlyItsConnection() async throws {
        let calls = Atomic<Int>(0)
        let server = try await TestServer { configuration in
            configuration.connectionPrologue = { channel in
                let call = calls.wrappingAdd(1, ordering: .relaxed).newValue
                if call == 1 { throw ChannelError.operationUnsupported }
                try channel.pipeline.syncOperations.addHandler(Swallower(passThrough: true))
            }
        }
        let refused = try RawHTTP2Client(port: server.port)
        #expect(refused.readFrame() == nil)  // closed: not even the server's SETTINGS
        let served = try RawHTTP2Client(port: server.port)
        let first = served.readFrame()
        #expect(first?.type == 4)  // the server's SETTINGS
        #expect(calls.load(ordering: .relaxed) == 2)
        refused.disconnect()
        served.disconnect()
        await server.stop()
    }
}

/// Drops every inbound byte (or, with `passThrough`, passes them on).
final class Swallower: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let passThrough: Bool

    init(passThrough: Bool = false) { self.passThrough = passThrough }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if passThrough { context.fireChannelRead(data) }
    }
}

/// Polls `condition` every 5 ms for at most 20 s.
func pollUntil(_ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(20)
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("condition not met within 20 s")
            return
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}
