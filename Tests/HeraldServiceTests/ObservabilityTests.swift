import GRPCEngine
import HeraldCore
import Logging
import PushProviders
import Testing

@testable import HeraldService

@Suite("Observability: bundle annotation, log lines, metrics exposition")
struct ObservabilityTests {
    // Hostile bytes first: never a crash, never a bundle made of garbage.
    @Test(arguments: [
        [UInt8](), [0x0A], [0x0A, 0xFF], [0x0A, 0x05, 0x61], [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
        [0x0B], [0x0A, 0x02, 0xC3, 0x28], [0x09, 1, 2, 3], [0x12, 0x80, 0x80, 0x80, 0x80, 0x10],
    ])
    func bundleFieldRejectsMalformedMessages(bytes: [UInt8]) {
        #expect(BundleField.extract(bytes) == nil)
    }

    @Test func bundleFieldIsFieldOneWhereverItIs() {
        // field 2 (varint 150), field 3 ("xy"), then field 1 ("com.a")
        let bytes: [UInt8] = [0x10, 0x96, 0x01, 0x1A, 0x02, 0x78, 0x79, 0x0A, 0x05] + Array("com.a".utf8)
        #expect(BundleField.extract(bytes) == "com.a")
        #expect(BundleField.extract([0x0A, 0x01] + Array("a".utf8) + [0x0A, 0x01] + Array("b".utf8)) == "a")
        let long = [UInt8](repeating: 0x61, count: BundleField.maxBytes + 1)
        #expect(BundleField.extract([0x0A, 0x81, 0x02] + long) == nil)
    }

    @Test func timestampsHaveThreeFractionDigits() {
        #expect(LogLine.timestamp(milliseconds: 0) == "1970-01-01T00:00:00.000Z")
        #expect(LogLine.timestamp(milliseconds: 1_795_413_901_007) == "2026-11-23T06:05:01.007Z")
        #expect(LogLine.timestamp(milliseconds: 1_795_413_901_120) == "2026-11-23T06:05:01.120Z")
    }

    @Test func jsonLinesEscapeEverythingAndStayOneLine() {
        let line = HeraldLogHandler.render(
            format: .json, timestamp: "T", level: .error, label: "herald", message: "bad \"x\"\n\u{1}",
            metadata: ["route": "a\\b", "msg": "shadow"])
        #expect(line == #"{"ts":"T","level":"error","label":"herald","msg":"bad \"x\"\n\u0001","route":"a\\b"}"#)
        #expect(!line.contains("\n"))
        let text = HeraldLogHandler.render(
            format: .text, timestamp: "T", level: .info, label: "herald", message: "m", metadata: ["k": "two words"])
        #expect(text == #"T info herald: m k="two words""#)
    }

    @Test func rpcTableCountsPerMethodAndCode() {
        let metrics = HeraldMetrics(states: ["sent"])
        let table = metrics.rpcTable(methods: ["/a.S/M", "/a.S/N"])
        table.record(method: 0, code: 0, nanoseconds: 50_000)
        table.record(method: 0, code: 0, nanoseconds: 3_000_000)
        table.record(method: 1, code: 5, nanoseconds: 0)
        table.record(method: -1, code: 12, nanoseconds: 0)
        table.record(method: 7, code: 0, nanoseconds: 0)  // not a method: ignored
        table.record(method: 0, code: 99, nanoseconds: 0)  // not a code: UNKNOWN
        let text = String(decoding: metrics.render(), as: UTF8.self)
        #expect(text.contains(#"herald_rpc_requests_total{method="a.S/M",code="OK"} 2"#))
        #expect(text.contains(#"herald_rpc_requests_total{method="a.S/N",code="NOT_FOUND"} 1"#))
        #expect(text.contains(#"herald_rpc_requests_total{method="unknown",code="UNIMPLEMENTED"} 1"#))
        #expect(text.contains(#"herald_rpc_requests_total{method="a.S/M",code="UNKNOWN"} 1"#))
        #expect(text.contains(#"herald_rpc_duration_seconds_count{method="a.S/M"} 3"#))
        #expect(text.contains(#"herald_rpc_duration_seconds_bucket{method="a.S/M",le="0.0001"} 2"#))
    }

    // Folded at scrape time: a second scrape adds nothing twice, calls between
    // scrapes are all there, the histogram count agrees with the counters.
    @Test func scrapesFoldTheEngineTallyExactlyOnce() {
        let metrics = HeraldMetrics(states: ["sent"])
        let table = metrics.rpcTable(methods: ["/a.S/M"])
        table.record(method: 0, code: 0, nanoseconds: 1_000)
        func scrape() -> String { String(decoding: metrics.render(), as: UTF8.self) }
        #expect(scrape().contains(#"herald_rpc_requests_total{method="a.S/M",code="OK"} 1"#))
        #expect(scrape().contains(#"herald_rpc_requests_total{method="a.S/M",code="OK"} 1"#))
        table.record(method: 0, code: 0, nanoseconds: 1_000)
        table.record(method: 0, code: 0, nanoseconds: 1_000)
        let text = scrape()
        #expect(text.contains(#"herald_rpc_requests_total{method="a.S/M",code="OK"} 3"#))
        #expect(text.contains(#"herald_rpc_duration_seconds_count{method="a.S/M"} 3"#))
        #expect(text.contains(#"herald_rpc_duration_seconds_sum{method="a.S/M"} 3e-06"#))
        #expect(text.contains(#"herald_rpc_duration_seconds_bucket{method="unknown",le="+Inf"} 0"#))
    }

    // What the ops kit's alerts read: auth refusals as a counter that only
    // grows by what the pools added (a shrinking count, as after a reload, adds
    // nothing), streams in flight summed per endpoint, readiness, and the data
    // directory's file system only once there is one.
    @Test func poolRefusalsReadinessAndDiskSpaceAreExported() {
        let metrics = HeraldMetrics(states: ["sent"])
        func pool(route: String, inFlight: Int, refusals: [String: Int]) -> ProviderPoolReport {
            ProviderPoolReport(
                platform: .ios, service: "apns", route: route, endpoint: "api.push.apple.com", connectionsOpen: 1,
                streamsInFlight: inFlight, lastError: nil, lastErrorAt: nil, authFailures: refusals, credentialsMinted: 1,
                bundleIDs: ["*"])
        }
        func scrape() -> String { String(decoding: metrics.render(), as: UTF8.self) }
        #expect(!scrape().contains("herald_data_dir_available_bytes"))
        #expect(scrape().contains("herald_ready 0.0"))
        metrics.refresh(OperatorSnapshot(pools: [
            pool(route: "a", inFlight: 2, refusals: ["InvalidProviderToken": 3]), pool(route: "b", inFlight: 5, refusals: [:]),
        ]))
        var text = scrape()
        #expect(text.contains(#"herald_provider_auth_failures_total{service="apns",route="a",reason="InvalidProviderToken"} 3"#))
        #expect(text.contains(#"herald_provider_streams_in_flight{service="apns",endpoint="api.push.apple.com"} 7.0"#))
        metrics.refresh(OperatorSnapshot(pools: [pool(route: "a", inFlight: 0, refusals: ["InvalidProviderToken": 5])]))
        metrics.refresh(OperatorSnapshot(pools: [pool(route: "a", inFlight: 0, refusals: ["InvalidProviderToken": 1])]))
        metrics.refresh(OperatorSnapshot(pools: [pool(route: "a", inFlight: 0, refusals: ["InvalidProviderToken": 2])]))
        text = scrape()
        #expect(text.contains(#"herald_provider_auth_failures_total{service="apns",route="a",reason="InvalidProviderToken"} 6"#))
        #expect(text.contains(#"herald_provider_streams_in_flight{service="apns",endpoint="api.push.apple.com"} 0.0"#))
        #expect(text.contains("herald_ready 0.0"))  // no serving state followed yet
        let state = ServingStateCell()
        metrics.follow(state)
        #expect(scrape().contains("herald_ready 0.0") && scrape().contains("herald_store_writable 1.0"))  // starting
        state.set(.serving)
        metrics.probed(disk: DiskSpace(availableBytes: 1024, sizeBytes: 4096))
        text = scrape()
        #expect(text.contains("herald_ready 1.0"))
        #expect(text.contains("herald_store_writable 1.0"))
        #expect(text.contains("herald_data_dir_available_bytes 1024.0"))
        #expect(text.contains("herald_data_dir_size_bytes 4096.0"))
        state.setStoreWritable(false)
        metrics.probed(disk: nil)
        text = scrape()
        #expect(text.contains("herald_ready 0.0") && text.contains("herald_store_writable 0.0"))
        #expect(text.contains("herald_data_dir_available_bytes 1024.0"))
        state.setStoreWritable(true)
        state.set(.draining)
        text = scrape()
        #expect(text.contains("herald_ready 0.0") && text.contains("herald_store_writable 1.0"))
    }

    @Test func diskSpaceReadsTheFileSystemAndRefusesAMissingDirectory() throws {
        let space = try #require(DiskSpace.of("/"))
        #expect(space.sizeBytes > 0 && space.availableBytes >= 0 && space.availableBytes <= space.sizeBytes)
        #expect(DiskSpace.of("/nonexistent-herald-\(UInt64.random(in: 0...UInt64.max))") == nil)
        #expect(DiskSpace.of("") == nil)
    }
}
