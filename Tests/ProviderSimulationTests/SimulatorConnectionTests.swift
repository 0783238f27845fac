import CInterop
import HTTP2Core
import NIOCore
import ProviderSimulation
import Testing

/// The shared simulator connection driven by bytes in memory: what any
/// provider adapter's actions do on the wire.
@Suite("Simulator connection (EmbeddedChannel, nghttp2 client in memory)")
struct SimulatorConnectionTests {
    @Test func answersWithStatusHeadersBodyAndContentLength() throws {
        let rig = try ConnectionRig()
        let stream = try rig.request(path: "/echo", body: Array("hello".utf8))
        try rig.pump()
        #expect(rig.recorder.header(":status", on: stream) == "200")
        #expect(rig.recorder.header("x-path", on: stream) == "/echo")
        #expect(rig.recorder.header("content-length", on: stream) == "5")
        #expect(rig.recorder.data[stream] == Array("hello".utf8))
        #expect(rig.recorder.closed[stream] == 0)
        #expect(rig.log.events == ["handshake CN=test client", "started", "began 1 1 1"])
        #expect(rig.log.requests.first?.header(":method") == "POST")
    }

    @Test func anEmptyBodyIsAnsweredWithoutContentLength() throws {
        let rig = try ConnectionRig()
        rig.log.actions["/empty"] = .respond(SimulatorResponse(status: 204), after: .zero)
        let stream = try rig.request(path: "/empty")
        try rig.pump()
        #expect(rig.recorder.header(":status", on: stream) == "204")
        #expect(rig.recorder.header("content-length", on: stream) == nil)
        #expect(rig.recorder.data[stream] == nil)
    }

    @Test func nothingIsReadBeforeTheHandshake() throws {
        let rig = try ConnectionRig(handshake: false)
        try rig.request(path: "/early")
        var bytes = ByteBuffer()
        try rig.client.drainOutput(into: &bytes)
        try rig.channel.writeInbound(bytes)
        #expect(try rig.channel.readOutbound(as: ByteBuffer.self) == nil)
        #expect(rig.log.events.isEmpty)
        #expect(rig.channel.isActive)
    }

    @Test func aHeldRequestIsNeverAnsweredAndOthersStillAre() throws {
        let rig = try ConnectionRig()
        rig.log.actions["/hang"] = .hold
        let held = try rig.request(path: "/hang")
        let answered = try rig.request(path: "/echo")
        try rig.pump()
        #expect(rig.recorder.headers[held] == nil)
        #expect(rig.recorder.closed[held] == nil)
        #expect(rig.recorder.header(":status", on: answered) == "200")
        #expect(rig.channel.isActive)
    }

    @Test func dropClosesTheConnectionUnanswered() throws {
        let rig = try ConnectionRig()
        rig.log.actions["/drop"] = .drop
        let stream = try rig.request(path: "/drop")
        try rig.pump()
        #expect(rig.recorder.headers[stream] == nil)
        #expect(!rig.channel.isActive)
        #expect(rig.log.events.last == "closed")
    }

    @Test func refuseWithGoAwayResetsTheStreamNamesTheOnesBeforeAndCloses() throws {
        let rig = try ConnectionRig()
        let first = try rig.request(path: "/echo")
        try rig.pump()
        rig.log.actions["/refuse"] = .refuseWithGoAway
        let refused = try rig.request(path: "/refuse")
        try rig.pump()
        #expect(rig.recorder.header(":status", on: first) == "200")
        #expect(rig.recorder.headers[refused] == nil)
        #expect(rig.recorder.closed[refused] == NGHTTP2_REFUSED_STREAM.rawValue)
        #expect(rig.recorder.goaways == [first])
        #expect(!rig.channel.isActive)  // nothing at or before the last stream is left open
    }

    @Test func adapterGoAwayRefusesTheStreamsAfterIt() throws {
        let rig = try ConnectionRig { $0.goAwayAfterStreams = 2 }
        let streams = try (0..<3).map { _ in try rig.request(path: "/echo") }
        try rig.pump()
        #expect(rig.recorder.goaways == [streams[1]])
        #expect(rig.recorder.header(":status", on: streams[0]) == "200")
        #expect(rig.recorder.header(":status", on: streams[1]) == "200")
        #expect(rig.recorder.headers[streams[2]] == nil)
        #expect(rig.recorder.closed[streams[2]] == NGHTTP2_REFUSED_STREAM.rawValue)
        #expect(rig.log.requests.count == 2)
        #expect(!rig.channel.isActive)
    }

    @Test func aDelayedAnswerWaitsForItsTime() throws {
        let rig = try ConnectionRig()
        rig.log.actions["/slow"] = .respond(SimulatorResponse(status: 503, body: [1, 2]), after: .seconds(5))
        let stream = try rig.request(path: "/slow")
        try rig.pump()
        #expect(rig.recorder.headers[stream] == nil)
        rig.channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        try rig.pump()
        #expect(rig.recorder.headers[stream] == nil)
        rig.channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        try rig.pump()
        #expect(rig.recorder.header(":status", on: stream) == "503")
        #expect(rig.recorder.data[stream] == [1, 2])
    }

    @Test func anIncompleteRequestIsCancelledAtTheRequestTimeout() throws {
        let rig = try ConnectionRig { $0.requestTimeout = .seconds(30) }
        let stalled = try rig.request(path: "/stalled", endStream: false)
        try rig.pump()
        rig.channel.embeddedEventLoop.advanceTime(by: .seconds(29))
        try rig.pump()
        #expect(rig.recorder.closed[stalled] == nil)
        rig.channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        try rig.pump()
        #expect(rig.recorder.closed[stalled] == NGHTTP2_CANCEL.rawValue)
        #expect(rig.log.requests.isEmpty)
        #expect(rig.channel.isActive)
    }

    @Test func aCompleteRequestIsNotCancelledByItsTimer() throws {
        let rig = try ConnectionRig { $0.requestTimeout = .seconds(30) }
        rig.log.actions["/hang"] = .hold
        let held = try rig.request(path: "/hang")
        try rig.pump()
        rig.channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        try rig.pump()
        #expect(rig.recorder.closed[held] == nil)
    }

    @Test func pingAndGoAwayReachTheAdapter() throws {
        let rig = try ConnectionRig()
        try rig.client.submitPing(payload: 42)
        try rig.pump()
        #expect(rig.log.events.last == "ping")
        try rig.client.submitGoaway(lastStreamID: 0)
        try rig.pump()
        #expect(rig.log.events.contains("goaway"))
    }

    @Test func bytesThatAreNotHTTP2CloseTheConnection() throws {
        let rig = try ConnectionRig()
        var garbage = ByteBuffer()
        garbage.writeString("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        try rig.channel.writeInbound(garbage)
        rig.channel.embeddedEventLoop.run()
        #expect(!rig.channel.isActive)
        #expect(rig.log.events.last == "closed")
    }
}
