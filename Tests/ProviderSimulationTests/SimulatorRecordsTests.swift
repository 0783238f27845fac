import Foundation
import HeraldPrimitives
import NIOCore
import NIOEmbedded
import ProviderSimulation
import Testing

@Suite("Simulator records, broadcast, channels, record file, identity")
struct SimulatorRecordsTests {
    @Test func recordsCountKeepAndCountStatusTogether() {
        let records = SimulatorRecords<String>(keep: true)
        records.record("a", status: 200)
        records.record("b")
        records.countStatus(410)
        #expect(records.count == 2)
        #expect(records.kept == ["a", "b"])
        #expect(records.statusCounts == [200: 1, 410: 1])
        records.reset()
        #expect(records.count == 0 && records.kept.isEmpty && records.statusCounts.isEmpty)
    }

    @Test func withKeepOffOnlyTheCountGrows() {
        let records = SimulatorRecords<Int>(keep: false)
        for value in 0..<100 { records.record(value) }
        #expect(records.count == 100)
        #expect(records.kept.isEmpty)
    }

    @Test func waitersResumeAtTheirCount() async {
        let records = SimulatorRecords<Int>(keep: false)
        let waiter = Task { await records.waitFor(count: 3) }
        for value in 0..<3 { records.record(value) }
        await waiter.value
        await records.waitFor(count: 2)  // already reached: returns at once
        #expect(records.count == 3)
    }

    @Test func closeWakesWaitersAndEndsStreamsNowAndLater() async {
        let records = SimulatorRecords<Int>(keep: false)
        let stream = records.subscribe()
        let waiter = Task { await records.waitFor(count: 1000) }
        records.record(7)
        records.close()
        await waiter.value
        await records.waitFor(count: 1000)
        var seen: [Int] = []
        for await value in stream { seen.append(value) }
        #expect(seen == [7])
        var late: [Int] = []
        for await value in records.subscribe() { late.append(value) }
        #expect(late.isEmpty)
    }

    @Test func finishStreamsEndsStreamsButNotWaiters() async {
        let records = SimulatorRecords<Int>(keep: true)
        let stream = records.subscribe()
        records.record(1)
        records.finishStreams()
        var seen: [Int] = []
        for await value in stream { seen.append(value) }
        #expect(seen == [1])
        let waiter = Task { await records.waitFor(count: 2) }
        records.record(2)  // waiters still count
        await waiter.value
    }

    @Test func broadcastReachesEverySubscriberUntilFinished() async {
        let broadcast = SimulatorBroadcast<String>()
        let one = broadcast.subscribe()
        let two = broadcast.subscribe()
        #expect(broadcast.count == 2)
        broadcast.yield("x")
        broadcast.finish()
        #expect(broadcast.count == 0)
        broadcast.yield("after")
        for stream in [one, two] {
            var seen: [String] = []
            for await value in stream { seen.append(value) }
            #expect(seen == ["x"])
        }
    }

    @Test func channelsNumberConnectionsAndForgetClosedOnes() async throws {
        let channels = SimulatorChannels()
        #expect(channels.nextConnectionID() == 1)
        #expect(channels.nextConnectionID() == 2)
        #expect(channels.accepted == 2)
        let channel = EmbeddedChannel()
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        channels.track(channel)
        #expect(channels.openCount == 1)
        await channels.closeAll()
        channel.embeddedEventLoop.run()  // the close future's callbacks
        #expect(channels.openCount == 0)
        #expect(channels.open.isEmpty)
    }

    @Test func recordFileAppendsLinesAcrossReopensAndFailsWhenClosed() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sim-record-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("record.jsonl").path
        let first = try SimulatorRecordFile(path: path)
        #expect(first.append(Array("one\n".utf8)))
        first.closeFile()
        #expect(!first.append(Array("lost\n".utf8)))
        let second = try SimulatorRecordFile(path: path)  // a restart appends
        #expect(second.append(Array("two\n".utf8)))
        second.closeFile()
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "one\ntwo\n")
    }

    @Test func recordFileInAMissingDirectoryThrows() {
        #expect(throws: POSIXFileError.self) {
            _ = try SimulatorRecordFile(path: "/nonexistent-\(UUID().uuidString)/record.jsonl")
        }
    }

    @Test func identityKeepsAConfiguredPairOrGeneratesOne() throws {
        let given = try SimulatorListener.identity(certificatePEM: "CERT", keyPEM: "KEY")
        #expect(given.certificatePEM == "CERT" && given.keyPEM == "KEY")
        let halfGiven = try SimulatorListener.identity(certificatePEM: "CERT", keyPEM: nil)
        #expect(halfGiven.certificatePEM.contains("BEGIN CERTIFICATE"))
        #expect(halfGiven.keyPEM.contains("PRIVATE KEY"))
    }
}
