import Testing
@testable import GRPCEngine

@Suite("gRPC message framing")
struct MessageFramingTests {
    static let message: [UInt8] = Array("the quick brown fox".utf8)

    @Test func framePrefix() {
        #expect(GRPCMessageFramer.frame([1, 2, 3]) == [0, 0, 0, 0, 3, 1, 2, 3])
        #expect(GRPCMessageFramer.frame([]) == [0, 0, 0, 0, 0])
    }

    @Test("a message split at every byte boundary", arguments: 0...(message.count + 5))
    func splitAtEveryBoundary(split: Int) throws {
        let framed = GRPCMessageFramer.frame(Self.message)
        var deframer = GRPCMessageDeframer(maxMessageBytes: 1024)
        var messages = try deframer.append(Array(framed[..<split]))
        messages += try deframer.append(Array(framed[split...]))
        #expect(messages == [Self.message])
        try deframer.finish()
    }

    @Test func oneByteAtATime() throws {
        var deframer = GRPCMessageDeframer(maxMessageBytes: 1024)
        var messages: [[UInt8]] = []
        for byte in GRPCMessageFramer.frame(Self.message) + GRPCMessageFramer.frame([]) {
            messages += try deframer.append([byte])
        }
        #expect(messages == [Self.message, []])
    }

    @Test func severalMessagesInOneBuffer() throws {
        let parts: [[UInt8]] = [[1], [], Array(repeating: 7, count: 300), [9, 9]]
        var deframer = GRPCMessageDeframer(maxMessageBytes: 1024)
        let messages = try deframer.append(parts.flatMap(GRPCMessageFramer.frame))
        #expect(messages == parts)
        #expect(deframer.isAtMessageBoundary)
    }

    @Test func tooLargeIsRejectedAtThePrefix() {
        var deframer = GRPCMessageDeframer(maxMessageBytes: 4 * 1024 * 1024)
        // Only the prefix of a 5 MiB message: rejected without any body buffered.
        #expect(throws: GRPCFramingError.messageTooLarge(declared: 5 * 1024 * 1024, limit: 4 * 1024 * 1024)) {
            _ = try deframer.append([0, 0, 0x50, 0, 0])
        }
        #expect(GRPCFramingError.messageTooLarge(declared: 2, limit: 1).status.code == .resourceExhausted)
    }

    @Test func exactlyTheLimitIsAccepted() throws {
        var deframer = GRPCMessageDeframer(maxMessageBytes: 4)
        #expect(try deframer.append(GRPCMessageFramer.frame([1, 2, 3, 4])) == [[1, 2, 3, 4]])
    }

    @Test func compressedFlagWithoutEncoding() {
        var deframer = GRPCMessageDeframer(maxMessageBytes: 1024)
        #expect(throws: GRPCFramingError.compressionNotSupported) { _ = try deframer.append([1, 0, 0, 0, 1, 0]) }
        #expect(GRPCFramingError.compressionNotSupported.status.code == .unimplemented)
    }

    @Test func invalidFlags() {
        var deframer = GRPCMessageDeframer(maxMessageBytes: 1024)
        #expect(throws: GRPCFramingError.invalidFlags(2)) { _ = try deframer.append([2, 0, 0, 0, 0]) }
    }

    @Test("truncated at end of stream", arguments: [1, 4, 5, 8])
    func truncated(length: Int) throws {
        var deframer = GRPCMessageDeframer(maxMessageBytes: 1024)
        _ = try deframer.append(Array(GRPCMessageFramer.frame([1, 2, 3, 4, 5])[..<length]))
        #expect(throws: GRPCFramingError.truncated(buffered: length)) { try deframer.finish() }
        #expect(GRPCFramingError.truncated(buffered: 1).status.code == .internalError)
    }

    @Test func bufferedBytesAreBounded() throws {
        var deframer = GRPCMessageDeframer(maxMessageBytes: 100)
        _ = try deframer.append([0, 0, 0, 0, 100] + Array(repeating: 1, count: 60))
        #expect(deframer.bufferedBytes == 65)
    }
}

@Suite("grpc-timeout parsing")
struct TimeoutParsingTests {
    @Test("every unit", arguments: [
        ("1H", Duration.seconds(3600)), ("2M", .seconds(120)), ("3S", .seconds(3)),
        ("4m", .milliseconds(4)), ("5u", .microseconds(5)), ("6n", .nanoseconds(6)),
        ("0S", .zero), ("12345678m", .milliseconds(12_345_678)), ("99999999H", .seconds(99_999_999 * 3600)),
        ("00000001S", .seconds(1)),
    ])
    func valid(header: String, expected: Duration) {
        #expect(GRPCTimeout(header: header)?.duration == expected)
    }

    @Test("bad values", arguments: [
        "", "S", "1", "123456789S", "-1S", "+1S", "1s", "1x", "1.5S", " 1S", "1S ", "1SS", "１S", "abc",
    ])
    func invalid(header: String) {
        #expect(GRPCTimeout(header: header) == nil)
    }

    @Test func fromBytes() {
        let bytes: [UInt8] = Array("250m".utf8)
        let timeout = bytes.withUnsafeBytes { GRPCTimeout(bytes: $0) }
        #expect(timeout?.duration == .milliseconds(250))
    }
}

@Suite("grpc-message percent-encoding")
struct PercentEncodingTests {
    @Test("encode", arguments: [
        ("plain ASCII text", "plain ASCII text"),
        ("100%", "100%25"),
        ("tab\there", "tab%09here"),
        ("line\nbreak\r", "line%0Abreak%0D"),
        ("del\u{7F}", "del%7F"),
        ("héllo", "h%C3%A9llo"),
        ("日本", "%E6%97%A5%E6%9C%AC"),
        ("🙂", "%F0%9F%99%82"),
        ("~!@#$^&*()_+{}|:\"<>?`-=[]\\;',./", "~!@#$^&*()_+{}|:\"<>?`-=[]\\;',./"),
        ("", ""),
    ])
    func encode(raw: String, encoded: String) {
        #expect(GRPCPercentEncoding.encode(raw) == encoded)
        #expect(GRPCPercentEncoding.decode(encoded) == raw)
    }

    @Test("lenient decode", arguments: [
        ("%", "%"), ("%4", "%4"), ("%zz", "%zz"), ("a%41b", "aAb"), ("%e6%97%a5", "日"), ("%FF", "\u{FFFD}"),
    ])
    func lenientDecode(encoded: String, decoded: String) {
        #expect(GRPCPercentEncoding.decode(encoded) == decoded)
    }
}

@Suite("metadata")
struct MetadataTests {
    @Test func lookupAndBinary() {
        let metadata = GRPCMetadata([("X-A", "1"), ("x-a", "2"), ("x-bin", "AQID"), ("y-bin", "AQI"), ("z-bin", "!!")])
        #expect(metadata["x-a"] == "1")
        #expect(metadata.values("x-a") == ["1", "2"])
        #expect(metadata["nope"] == nil)
        #expect(metadata.binaryValue("x-bin") == [1, 2, 3])
        #expect(metadata.binaryValue("y-bin") == [1, 2])
        #expect(metadata.binaryValue("z-bin") == nil)
        #expect(metadata.map(\.name) == ["x-a", "x-a", "x-bin", "y-bin", "z-bin"])
    }

    @Test("content-type", arguments: [
        ("application/grpc", true), ("application/grpc+proto", true), ("application/grpc;charset=utf-8", true),
        ("Application/GRPC", true), ("application/grpcx", false), ("application/json", false), ("", false),
    ])
    func contentType(value: String, accepted: Bool) {
        let bytes = Array(value.utf8)
        #expect(bytes.withUnsafeBytes { isGRPCContentType($0) } == accepted)
    }
}
