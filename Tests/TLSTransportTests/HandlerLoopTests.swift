import NIOCore
import NIOEmbedded
import Testing
import TLSTransport

/// A value handed across threads on purpose (the test's point is calling off the loop).
private struct CrossThread<Value>: @unchecked Sendable {
    let value: Value
}

/// `OpenSSLHandler` on a loop of its own thread, its context carried out of it.
private func handlerOnItsLoop() async throws -> CrossThread<(handler: OpenSSLHandler, context: ChannelHandlerContext)> {
    let certificate = try SelfSignedCertificate.generate()
    let tls = try TLSContext.server(certificatePEM: certificate.certificatePEM, keyPEM: certificate.keyPEM)
    let channel = NIOAsyncTestingChannel()
    return try await channel.eventLoop.submit {
        let handler = try OpenSSLHandler(context: tls)
        try channel.pipeline.syncOperations.addHandler(handler)
        return CrossThread(value: (handler, try channel.pipeline.syncOperations.context(handler: handler)))
    }.get()
}

/// The handler asserts its event loop at every entry (debug builds).
@Suite("OpenSSLHandler loop confinement")
struct HandlerLoopTests {
    @Test func onItsLoopAFlushBeforeTheHandshakeDoesNothing() async throws {
        let bound = try await handlerOnItsLoop()
        try await bound.value.context.eventLoop.submit {
            bound.value.handler.flush(context: bound.value.context)
        }.get()
    }

    #if DEBUG
    @Test func offItsLoopAFlushEndsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            let bound = try await handlerOnItsLoop()
            bound.value.handler.flush(context: bound.value.context)
        }
    }
    #endif
}
