@testable import APNsSimulation
import HeraldPrimitives
import Testing

@testable import HeraldService

/// The simulator's record file: one JSON object per line, whatever the
/// payload holds (line breaks, escapes, bytes that are not JSON at all).
@Suite("Simulator record lines")
struct SimulatorRecorderTests {
    static func delivery(_ payload: String) -> APNsDelivery {
        APNsDelivery(connectionID: 1, streamID: 1, apnsID: "id-\"1\"", deviceToken: "tok",
                     headers: [(":path", "/3/device/tok"), ("authorization", "bearer secret"), ("apns-topic", "com.a")],
                     payload: Array(payload.utf8))
    }

    static func parsed(_ line: [UInt8]) throws -> JSONObject {
        #expect(line.last == UInt8(ascii: "\n"))
        #expect(line.dropLast().allSatisfy { $0 != 10 && $0 != 13 }, "one line")
        return try #require(try JSONParser.parse(Array(line.dropLast())).objectValue)
    }

    // MARK: Hostile first

    @Test(arguments: [
        "{\n  \"aps\": {\"alert\": \"a\\nb\"}\r\n}",  // raw line breaks as white space: written compactly
        "{\"aps\":{}} trailing",  // not one JSON value
        "not json",
        "{\"a\":\"\\u0000\"}",
        "",
    ])
    func everyPayloadMakesOneValidLine(_ payload: String) throws {
        let line = try Self.parsed(SimulatorRecorder.line(for: Self.delivery(payload)))
        #expect(line["service"] == .string("apns"))
        #expect(line["apns_id"] == .string("id-\"1\""))
        if let value = try? JSONParser.parse(Array(payload.utf8)) {
            #expect(line["payload"] == value)
        } else {
            #expect(line["payload"] == .string(payload))
        }
    }

    @Test func theAuthorizationHeaderIsNeverRecorded() throws {
        let line = try Self.parsed(SimulatorRecorder.line(for: Self.delivery("{}")))
        #expect(line["headers"] == .object([":path": .string("/3/device/tok"), "apns-topic": .string("com.a")]))
    }

    @Test func aCompactObjectGoesInVerbatim() throws {
        let payload = #"{"aps":{"alert":{"title":"Hi é"}},"ctx_idempotency_key":"k"}"#
        let bytes = SimulatorRecorder.line(for: Self.delivery(payload))
        #expect(String(decoding: bytes, as: UTF8.self).contains(#""payload":"# + payload + ","))
        #expect(try Self.parsed(bytes)["payload"] == (try JSONParser.parse(Array(payload.utf8))))
    }
}
