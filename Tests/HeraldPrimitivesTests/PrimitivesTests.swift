import HeraldPrimitives
import HeraldTestSupport
import Testing

@Suite("Timestamp arithmetic in seconds")
struct TimestampArithmeticTests {
    @Test("Hostile: moving back across a second boundary, before 1970, and by less than a nanosecond")
    func hostile() {
        let t = Timestamp(seconds: 100, nanoseconds: 100_000_000)
        let back = t.addingTimeInterval(-0.3)
        #expect(back.seconds == 99 && back.nanoseconds == 800_000_000)
        let early = Timestamp(seconds: 0).addingTimeInterval(-1.25)
        #expect(early.seconds == -2 && early.nanoseconds == 750_000_000)
        #expect(early.timeIntervalSince1970 == -1.25)
        #expect(Timestamp(timeIntervalSince1970: -1.25) == early)
        #expect(t.addingTimeInterval(1e-12) == t)
        #expect(Timestamp(milliseconds: -1).seconds == -1 && Timestamp(milliseconds: -1).nanoseconds == 999_000_000)
    }

    @Test("Forward, round trips and comparisons")
    func forward() {
        let t = Timestamp(seconds: 1_700_000_000, nanoseconds: 900_000_000)
        let later = t.addingTimeInterval(0.2)
        #expect(later.seconds == 1_700_000_001 && later.nanoseconds == 100_000_000)
        #expect(abs(later.timeIntervalSince(t) - 0.2) < 1e-9)
        #expect(t < later && later.timeIntervalSince(t) > 0 && t.timeIntervalSince(later) < 0)
        #expect(Timestamp(milliseconds: 1_700_000_000_123).milliseconds == 1_700_000_000_123)
        #expect(Timestamp(timeIntervalSince1970: 1.5) == Timestamp(milliseconds: 1_500))
        #expect(Duration.milliseconds(1_500).timeInterval == 1.5)
        let now = Timestamp.now
        #expect(abs(Double(now.milliseconds - Timestamp.nowMilliseconds())) < 1_000)
    }
}

@Suite("One UUID generator per version")
struct UUIDGeneratorTests {
    static func isCanonical(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(index) {
                if byte != UInt8(ascii: "-") { return false }
            } else if !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) && !(UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte) {
                return false
            }
        }
        return true
    }

    @Test("Hostile: all-ones and all-zero randomness still give the version and the RFC 9562 variant")
    func extremes() {
        struct Constant: RandomNumberGenerator {
            let value: UInt64
            mutating func next() -> UInt64 { value }
        }
        for value in [UInt64.max, 0] {
            var generator = Constant(value: value)
            let v4 = UUIDv4.make(using: &generator)
            let v7 = UUIDv7.make(now: -5, using: &generator)  // before 1970: clamped to 0
            #expect(Self.isCanonical(v4) && Self.isCanonical(v7))
            #expect(Array(v4.utf8)[14] == UInt8(ascii: "4") && Array(v7.utf8)[14] == UInt8(ascii: "7"))
            for id in [v4, v7] { #expect("89ab".utf8.contains(Array(id.utf8)[19])) }
            #expect(v7.hasPrefix("00000000-0000-7"))
        }
    }

    @Test("Hostile: parse takes only the exact text format makes")
    func parseRejectsEveryOtherText() {
        let id = "018bcfe5-6800-7abc-8def-0123456789ab"
        for text in [
            "", "018BCFE5-6800-7ABC-8DEF-0123456789AB", "018bcfe5-6800-7abc-8def-0123456789a",
            "018bcfe5-6800-7abc-8def-0123456789abc", "018bcfe5x6800-7abc-8def-0123456789ab",
            "018bcfe5-6800-7abc-8def-0123456789a\u{0}", "{18bcfe5-6800-7abc-8def-0123456789a}",
            "018bcfe56800-7abc-8def-0123456789ab-", "018bcfe5-6800-7abc-8def-0123456789\u{e9}",
            "g18bcfe5-6800-7abc-8def-0123456789ab", String(repeating: "-", count: 36),
        ] {
            #expect(UUIDText.parse(text) == nil, "\(text)")
        }
        let bits = UUIDText.parse(id)
        #expect(bits?.high == 0x018b_cfe5_6800_7abc && bits?.low == 0x8def_0123_4567_89ab)
    }

    @Test("parse and format round-trip, and the bits sort as the text does")
    func parseRoundTrips() {
        var generator = SplitMix64(seed: 11)
        var previous: (text: String, bits: (UInt64, UInt64))?
        for value in [UInt64.max, 0] {
            let text = UUIDText.format(high: value, low: value)
            #expect(UUIDText.parse(text).map { [$0.high, $0.low] } == [value, value])
        }
        for _ in 0..<1_000 {
            let text = UUIDv4.make(using: &generator)
            guard let bits = UUIDText.parse(text) else {
                Issue.record("not parsed: \(text)")
                return
            }
            #expect(UUIDText.format(high: bits.high, low: bits.low) == text)
            if let previous { #expect((previous.text < text) == (previous.bits < (bits.high, bits.low))) }
            previous = (text, (bits.high, bits.low))
        }
    }

    @Test("v4 from the system generator; v7 starts with the time and sorts by it")
    func shapes() {
        let ids = (0..<100).map { _ in UUIDv4.make() }
        #expect(Set(ids).count == 100 && ids.allSatisfy(Self.isCanonical))
        var generator = SplitMix64(seed: 7)
        let a = UUIDv7.make(now: 1_700_000_000_000, using: &generator)
        let b = UUIDv7.make(now: 1_700_000_000_001, using: &generator)
        #expect(a.hasPrefix("018bcfe5-6800-7") && a < b)
        var again = SplitMix64(seed: 7)
        #expect(UUIDv7.make(now: 1_700_000_000_000, using: &again) == a)
    }
}

@Suite("APNs header values and JSON integers")
struct SharedValueTests {
    @Test("Hostile numbers: NaN, infinities and out-of-range values are not integers")
    func integers() {
        for bad in [Double.nan, .infinity, -.infinity, 9.3e18, -9.3e18, 1e300] {
            #expect(JSONValue.integer(fromNumber: bad) == nil)
        }
        #expect(JSONValue.integer(fromNumber: 12.9) == 12)
        #expect(JSONValue.integer(fromNumber: -12.9) == -12)
    }

    @Test("Wire values are Apple's")
    func wireValues() {
        #expect([APNsPriority.immediately, .considerDevicePower, .low].map(\.description) == ["10", "5", "1"])
        #expect(APNsPushType.alert.rawValue == "alert" && APNsPushType.background.rawValue == "background")
        #expect(APNsPushType.all.count == 10 && APNsPushType.all.contains(APNsPushType(rawValue: "liveactivity")))
    }
}
