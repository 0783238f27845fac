import HeraldPrimitives
import HeraldTestSupport
import Testing
import TimeZones
@testable import HeraldCore

/// The delivery-policy spec parser (``PolicyRules/parse(_:zoneProblem:)``)
/// and policies files (``PolicySet``): hostile input first, every refusal
/// naming its key.
@Suite("Delivery policy specs")
struct PolicySpecTests {
    /// The zone check the server injects, over a fixed list (no I/O here).
    static func zoneProblem(_ name: String) -> String? {
        ["Europe/Berlin", "America/New_York", "UTC"].contains(name) ? nil : "unknown time zone (no such file)"
    }

    static func parse(_ line: String) throws(PolicySpecError) -> PolicyRules {
        try PolicyRules.parse(line, zoneProblem: zoneProblem)
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        var spec: String
        /// The key the error must name (nil: the whole line).
        var key: String?
        /// A fragment of the error's text.
        var says: String
        var testDescription: String { String(spec.prefix(60)) }
    }

    static let refusals: [Refusal] = [
        .init(spec: "", key: "bundles", says: "required"),
        .init(spec: "timezone=UTC", key: "bundles", says: "required"),
        .init(spec: "bundles=", key: "bundles", says: "empty value"),
        .init(spec: "bundles=com.a,,com.b", key: "bundles", says: "an empty bundle id"),
        .init(spec: "bundles=com.a,", key: "bundles", says: "an empty bundle id"),
        .init(spec: "bundles=com.a,com.a", key: "bundles", says: "bundle named twice"),
        .init(spec: "bundles=app", key: "bundles", says: "reverse-DNS"),
        .init(spec: "bundles=com.a bundles=com.b", key: "bundles", says: "given twice"),
        .init(spec: "bundles=com.a colour=red", key: "colour", says: "unknown key"),
        .init(spec: "bundles=com.a Cap=1/1h", key: "Cap", says: "unknown key"),
        .init(spec: "bundles=com.a quiet-hours", key: nil, says: "expected key=value"),
        .init(spec: "bundles=com.a\u{0} cap=1/1h", key: nil, says: "NUL"),
        .init(spec: "bundles=com.a\u{1B}[31m", key: nil, says: "control byte"),
        .init(spec: "bundles=com.a " + String(repeating: "x", count: 5000), key: nil, says: "more than the limit of 4096"),
        .init(spec: "bundles=com.a timezone=Mars/Olympus", key: "timezone", says: "unknown time zone"),
        .init(spec: "bundles=com.a timezone=../../etc/passwd", key: "timezone", says: "not a time zone name"),
        .init(spec: "bundles=com.a timezone=/usr/share/zoneinfo/UTC", key: "timezone", says: "absolute path"),
        .init(spec: "bundles=com.a timezone=UTC timezone=UTC", key: "timezone", says: "given twice"),
        .init(spec: "bundles=com.a timezone=", key: "timezone", says: "empty value"),
        .init(spec: "bundles=com.a quiet-hours=24:00-08:00", key: "quiet-hours", says: "HH:MM-HH:MM"),
        .init(spec: "bundles=com.a quiet-hours=7:5-08:00", key: "quiet-hours", says: "HH:MM-HH:MM"),
        .init(spec: "bundles=com.a quiet-hours=22:00-08:60", key: "quiet-hours", says: "HH:MM-HH:MM"),
        .init(spec: "bundles=com.a quiet-hours=22:00", key: "quiet-hours", says: "HH:MM-HH:MM"),
        .init(spec: "bundles=com.a quiet-hours=22:00-08:00-09:00", key: "quiet-hours", says: "HH:MM-HH:MM"),
        .init(spec: "bundles=com.a quiet-hours=22:00-22:00", key: "quiet-hours", says: "ambiguous"),
        .init(spec: "bundles=com.a quiet-hours=22:00-08:00 quiet-hours=12:00-13:00", key: "quiet-hours", says: "given twice"),
        .init(spec: "bundles=com.a cap=0/1h", key: "cap", says: "count must be 1...1000000"),
        .init(spec: "bundles=com.a cap=3/0h", key: "cap", says: "period must be 1s...366d"),
        .init(spec: "bundles=com.a cap=3/367d", key: "cap", says: "period must be 1s...366d"),
        .init(spec: "bundles=com.a cap=99999999999999999999999/1h", key: "cap", says: "count must be"),
        .init(spec: "bundles=com.a cap=3/99999999999999999999999d", key: "cap", says: "period must be"),
        .init(spec: "bundles=com.a cap=3/106751991167300d", key: "cap", says: "period must be"),
        .init(spec: "bundles=com.a cap=-1/1h", key: "cap", says: "expected N/PERIOD"),
        .init(spec: "bundles=com.a cap=3/1w", key: "cap", says: "unit must be s, m, h or d"),
        .init(spec: "bundles=com.a cap=3/h", key: "cap", says: "expected N/PERIOD"),
        .init(spec: "bundles=com.a cap=3", key: "cap", says: "expected N/PERIOD"),
        .init(spec: "bundles=com.a cap=3/1h/2", key: "cap", says: "expected N/PERIOD"),
        .init(spec: "bundles=com.a cap=+3/1h", key: "cap", says: "expected N/PERIOD"),
        .init(spec: "bundles=com.a cap=3/1h cap=5/60m", key: "cap", says: "same period"),
        .init(spec: "bundles=com.a campaign-cap=0/7d", key: "campaign-cap", says: "count must be"),
        .init(spec: "bundles=com.a " + (1...9).map { "cap=1/\($0)h" }.joined(separator: " "), key: "cap", says: "more than 8"),
        .init(spec: "bundles=com.a max-per-second=0", key: "max-per-second", says: "1...1000000"),
        .init(spec: "bundles=com.a max-per-second=-5", key: "max-per-second", says: "1...1000000"),
        .init(spec: "bundles=com.a max-per-second=1000001", key: "max-per-second", says: "1...1000000"),
        .init(spec: "bundles=com.a max-per-second=99999999999999999999999999", key: "max-per-second", says: "1...1000000"),
        .init(spec: "bundles=com.a max-per-second=1.5", key: "max-per-second", says: "1...1000000"),
        .init(spec: "bundles=com.a max-per-second=5 max-per-second=6", key: "max-per-second", says: "given twice"),
    ]

    @Test(arguments: refusals)
    func refusedNamingTheKey(_ row: Refusal) {
        #expect {
            _ = try Self.parse(row.spec)
        } throws: { error in
            guard let error = error as? PolicySpecError else { return false }
            let text = error.description
            return error.key == row.key && text.contains(row.says) && (row.key.map { text.hasPrefix($0) || text.hasPrefix("\"\($0)\"") } ?? true)
                && text.count < 400 && !text.contains("\u{0}") && !text.contains("\u{1B}")
        }
    }

    @Test func errorsQuoteTheValueTruncatedAndEscaped() {
        let hostile = "bundles=com.a cap=\"" + String(repeating: "9", count: 300)
        #expect {
            _ = try Self.parse(hostile)
        } throws: { error in
            let text = String(describing: error)
            return text.hasPrefix("cap \"\\\"999") && text.contains("…\"") && text.count < 200
        }
        let unknownKey = String(repeating: "K", count: 100) + "=1"
        #expect {
            _ = try Self.parse("bundles=com.a " + unknownKey)
        } throws: { error in
            let text = String(describing: error)
            return text.hasPrefix("\"KKK") && text.contains("…\" \"1\": unknown key") && text.count < 250
        }
    }

    @Test func aFullSpecParsesAndItsCanonicalFormRoundTrips() throws {
        let rules = try Self.parse(
            "  bundles=com.a,com.b\ttimezone=Europe/Berlin quiet-hours=22:00-08:00 cap=10/7d cap=3/24h campaign-cap=1/7d max-per-second=500 ")
        #expect(rules.bundles == ["com.a", "com.b"])
        #expect(rules.timezone == "Europe/Berlin")
        #expect(rules.quietHours?.description == "22:00-08:00")
        #expect(rules.caps == [FrequencyCap(count: 3, periodMilliseconds: 86_400_000)!, FrequencyCap(count: 10, periodMilliseconds: 7 * 86_400_000)!])
        #expect(rules.campaignCaps == [FrequencyCap(count: 1, periodMilliseconds: 7 * 86_400_000)!])
        #expect(rules.maxPerSecond == 500)
        #expect(rules.canonical
            == "bundles=com.a,com.b timezone=Europe/Berlin quiet-hours=22:00-08:00 cap=3/1d cap=10/7d campaign-cap=1/7d max-per-second=500")
        #expect(try Self.parse(rules.canonical) == rules)
        #expect(rules.longestCapPeriodMilliseconds == 7 * 86_400_000)
    }

    @Test func onlyBundlesIsRequired() throws {
        let rules = try Self.parse("bundles=com.a")
        #expect(rules.timezone == nil && rules.quietHours == nil && rules.caps.isEmpty && rules.campaignCaps.isEmpty)
        #expect(rules.maxPerSecond == nil && !rules.holdsPushes && rules.canonical == "bundles=com.a")
        #expect(try Self.parse("bundles=com.a cap=90/90m cap=5/45s").canonical == "bundles=com.a cap=5/45s cap=90/90m")
        #expect(try Self.parse("bundles=com.a cap=1/366d").caps.first?.periodMilliseconds == 366 * 86_400_000)
    }

    @Test func theZoneCheckIsTheInjectedOne() throws {
        var asked: [String] = []
        _ = try PolicyRules.parse("bundles=com.a timezone=Europe/Berlin") { asked.append($0); return nil }
        #expect(asked == ["Europe/Berlin"])
    }

    // MARK: Policies files and sets

    @Test func aFileSkipsCommentsAndBlankLinesAndNumbersLines() throws {
        let text = """
            # policies
            bundles=com.a quiet-hours=22:00-08:00   # nights off

            \t
            bundles=com.b cap=1/1h\r
            """
        let specs = try PolicySet.parseFile(text, zoneProblem: Self.zoneProblem)
        #expect(specs.map(\.line) == [2, 5])
        let set = try PolicySet(specs.map(\.rules))
        #expect(set.rules(for: "com.a")?.quietHours?.description == "22:00-08:00")
        #expect(set.rules(for: "com.b")?.caps.count == 1)
        #expect(set.rules(for: "com.c") == nil)
        #expect(set.canonicalByBundle == ["com.a": "bundles=com.a quiet-hours=22:00-08:00", "com.b": "bundles=com.b cap=1/1h"])
    }

    @Test func aFileErrorNamesTheLineAndTheKey() {
        let text = "bundles=com.a\n\n# c\nbundles=com.b cap=0/1h\n"
        #expect {
            _ = try PolicySet.parseFile(text, zoneProblem: Self.zoneProblem)
        } throws: { error in
            let error = error as? PolicySpecError
            return error?.line == 4 && error?.key == "cap" && error?.description.hasPrefix("line 4: cap \"0/1h\": ") == true
        }
    }

    @Test func aBundleInTwoSpecsIsAnError() throws {
        let a = try Self.parse("bundles=com.a,com.b")
        let b = try Self.parse("bundles=com.c,com.b cap=1/1h")
        #expect {
            _ = try PolicySet([a, b], origins: ["--delivery-policy", "policies.txt line 7"])
        } throws: { error in
            let text = String(describing: error)
            return text.contains("bundles \"com.b\"") && text.contains("--delivery-policy and policies.txt line 7")
        }
        #expect(try PolicySet([a]).rules(for: "com.b") == a)
        #expect(PolicySet.empty.isEmpty && PolicySet.empty.rules(for: "com.a") == nil)
    }

    /// Mutated specs (random bytes spliced into a full one, 5,000 seeds):
    /// every outcome is rules that round-trip or one bounded error line.
    @Test func mutatedSpecsParseOrFailInOneBoundedLine() {
        let base = Array("bundles=com.a,com.b timezone=UTC quiet-hours=22:00-08:00 cap=3/24h campaign-cap=1/7d max-per-second=5".utf8)
        let alphabet = Array("=,/-: \t0123456789hdmsx#\u{0}\u{7F}é".utf8)
        var random = SplitMix64(seed: 26)
        for _ in 0..<5000 {
            var bytes = base
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let at = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[at] = alphabet.randomElement(using: &random)!
                case 1: bytes.insert(alphabet.randomElement(using: &random)!, at: at)
                default: bytes.remove(at: at)
                }
            }
            let line = String(decoding: bytes, as: UTF8.self)
            do {
                let rules = try Self.parse(line)
                #expect(try Self.parse(rules.canonical) == rules, "\(line)")
            } catch {
                let text = error.description
                #expect(!text.contains("\n") && !text.contains("\u{0}") && text.utf8.count < 400, "\(line)")
            }
        }
    }
}
