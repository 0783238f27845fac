import Testing

@testable import GRPCEngine

/// A call's life as a state machine: no sockets, no nghttp2.
@Suite("Stream state machine (receiving → running → responded → closed)")
struct StreamStateMachineTests {
    @Test("a unary call answered inline ends Trailers-Only-shaped once, then closes")
    func inlineUnary() {
        var machine = GRPCStreamStateMachine()
        #expect(machine.isReceiving)
        #expect(machine.end() == .trailersOnly)
        #expect(machine.end() == .none, "a second answer is never submitted")
        #expect(!machine.deadlineExpired())
        #expect(machine.closed() == .release)
        #expect(machine.closed() == .none)
    }

    @Test("a running handler is cancelled when the stream closes under it")
    func resetWhileRunning() {
        var machine = GRPCStreamStateMachine()
        machine.handlerStarted()
        #expect(machine.isRunning)
        #expect(machine.deadlineExpired())
        #expect(machine.closed() == .cancelWork)
        #expect(!machine.handlerFinished(), "a late result is dropped")
    }

    @Test("a streaming call that sent messages ends with trailers; one that did not, Trailers-Only")
    func streamingEnds() {
        var sent = GRPCStreamStateMachine()
        sent.handlerStarted()
        let started = sent.startResponse()
        #expect(started)
        #expect(sent.handlerFinished())
        #expect(sent.end() == .trailers)
        let startedAfterEnd = sent.startResponse()
        #expect(!startedAfterEnd, "no message after the end")
        var silent = GRPCStreamStateMachine()
        silent.handlerStarted()
        #expect(silent.end() == .trailersOnly)
    }

    @Test("the deadline during the request or the handler ends the call; after the answer it does nothing")
    func deadline() {
        var machine = GRPCStreamStateMachine()
        #expect(machine.deadlineExpired())
        machine.handlerStarted()
        #expect(machine.deadlineExpired())
        _ = machine.end()
        #expect(!machine.deadlineExpired())
        #expect(!machine.handlerFinished())
    }
}
