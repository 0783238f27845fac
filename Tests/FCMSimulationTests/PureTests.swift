@testable import FCMSimulation
import HeraldPrimitives
import Testing

@Suite("FCM simulator: pure parts")
struct PureTests {
    @Test("JSONSpan finds the top-level member as received, past strings with braces, quotes and escapes")
    func span() throws {
        func member(_ text: String) -> String? {
            let bytes = Array(text.utf8)
            return JSONSpan.member("message", in: bytes).map { String(decoding: bytes[$0], as: UTF8.self) }
        }
        #expect(member(#"{"message":{"a":1}}"#) == #"{"a":1}"#)
        #expect(member(#" { "x" : "}{\"" , "message" :  [1, {"b":"]"}] , "y":2 } "#) == #"[1, {"b":"]"}]"#)
        #expect(member(#"{"a":{"message":1},"message":"m\"}"}"#) == #""m\"}""#)
        #expect(member(#"{"message":1,"message":{"last":true}}"#) == #"{"last":true}"#)
        #expect(member(#"{"message":  -1.5e3 }"#) == "-1.5e3")
        #expect(member(#"{"other":1}"#) == nil)
        #expect(member("[]") == nil)
        #expect(member("") == nil)
    }

    @Test("A key spelled with escapes is still the message; its bytes are then the compact form")
    func escapedKey() throws {
        let body = Array(#"{"messag\u0065":{"token":"abcdefgh12", "data":{"k":"v"}}}"#.utf8)
        let valid = try MessageValidator.validate(body).get()
        #expect(valid.target == .token("abcdefgh12"))
        #expect(String(decoding: valid.messageBytes, as: UTF8.self) == #"{"data":{"k":"v"},"token":"abcdefgh12"}"#)
    }

    @Test("TTL durations: the pattern and the four-week limit")
    func ttl() {
        #expect(MessageValidator.ttlSeconds("0s") == 0)
        #expect(MessageValidator.ttlSeconds("3600s") == 3600)
        #expect(MessageValidator.ttlSeconds("000002419200s") == 2_419_200)
        #expect(MessageValidator.ttlSeconds("1.123456789s") != nil)
        for bad in ["", "s", "1", "1.s", ".5s", "1.1234567890s", "-1s", "+1s", "1 s", "1S", "1e3s", "１s"] {
            #expect(MessageValidator.ttlSeconds(bad) == nil, "\(bad)")
        }
        #expect(MessageValidator.ttlSeconds("2419200.000000001s")! > 2_419_200)
        #expect(MessageValidator.ttlSeconds(String(repeating: "9", count: 40) + "s")! > 2_419_200)
    }

    @Test("The quota bucket: capacity, continuous refill, Retry-After rounded up to whole seconds")
    func bucket() {
        let start = Timestamp(seconds: 1_000_000)
        var bucket = QuotaBucket(perMinute: 3, now: start)
        func take(_ seconds: Double) -> Int? { bucket.take(now: start.addingTimeInterval(seconds)) }
        for _ in 0..<3 { #expect(take(0) == nil) }
        #expect(take(0) == 20)
        #expect(take(5) == 15)
        #expect(take(20) == nil)
        #expect(take(20.5) == 20)
        // Never more than the capacity, however long it waited.
        for _ in 0..<3 { #expect(take(86_400) == nil) }
        #expect(take(86_400) != nil)
        // A clock that steps back adds nothing to the bucket.
        #expect(take(0) != nil)
    }

    @Test("Form decoding: escapes, plus, duplicates, bad escapes")
    func form() {
        #expect(FormDecoder.decode(Array("a=b+c&d=%2F%3a&a=z&e".utf8)) == ["a": "z", "d": "/:", "e": ""])
        #expect(FormDecoder.decode(Array("a=%".utf8)) == nil)
        #expect(FormDecoder.decode(Array("a=%4".utf8)) == nil)
        #expect(FormDecoder.decode(Array("a=%C3%28".utf8)) == nil)
        #expect(FormDecoder.decode([]) == [:])
    }

    @Test("Fault queue: order, counts, invalid grants apart")
    func faults() {
        var queue = FaultQueue()
        queue.inject(.internalError, count: 2)
        queue.inject(.invalidGrant, count: 1)
        queue.inject(.goaway, count: 0)
        queue.inject(.dropConnection, count: 1)
        #expect(queue.pending == 4)
        var sent: [FCMFault?] = []
        for _ in 0..<4 { sent.append(queue.nextSendFault()) }
        #expect(sent == [.internalError, .internalError, .dropConnection, nil])
        let grants = [queue.nextGrantFails(), queue.nextGrantFails()]
        #expect(grants == [true, false])
    }
}
