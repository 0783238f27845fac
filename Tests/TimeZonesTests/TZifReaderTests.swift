import HeraldPrimitives
import Testing
@testable import TimeZones

/// The TZif reader on hostile bytes first: every malformation is a typed
/// error, never a trap.
@Suite struct TZifReaderTests {
    static let newYork = try! POSIXFile.readBytes("/usr/share/zoneinfo/America/New_York")

    func parse(_ b: TZifBuilder) throws(TZifError) -> ZoneRules { try TZif.parse(b.bytes, name: "Test/Zone") }

    func error(_ b: TZifBuilder) -> TZifError? {
        do { _ = try parse(b); return nil } catch { return error }
    }

    @Test func emptyAndShortInputsAreTruncated() {
        #expect(throws: TZifError.truncated(what: "header", offset: 0, needed: 44)) { try TZif.parse([], name: "x") }
        #expect(throws: TZifError.truncated(what: "header", offset: 0, needed: 44)) { try TZif.parse(Array("TZif2".utf8), name: "x") }
    }

    @Test func everyPrefixOfARealFileFailsCleanly() throws {
        let full = Self.newYork
        _ = try TZif.parse(full, name: "America/New_York")
        for count in 0..<full.count {
            let prefix = Array(full[..<count])
            do {
                _ = try TZif.parse(prefix, name: "cut")
                Issue.record("a \(count)-byte prefix parsed")
            } catch {
                switch error {
                case .truncated, .invalidFooter: break
                default: Issue.record("prefix \(count): unexpected \(error)")
                }
            }
        }
    }

    @Test func mutatedRealFilesNeverTrap() {
        // A cheap in-test fuzz: 3000 deterministic mutations (xorshift).
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> Int { state ^= state << 13; state ^= state >> 7; state ^= state << 17; return Int(state >> 1) }
        var parsed = 0
        for _ in 0..<3000 {
            var bytes = Self.newYork
            for _ in 0..<(1 + next() % 4) { bytes[next() % bytes.count] = UInt8(truncatingIfNeeded: next()) }
            if let zone = try? TZif.parse(bytes, name: "m") {
                parsed += 1
                // A file that parses must also convert without trapping.
                _ = zone.localTime(at: ms("2030-06-01T00:00:00Z"))
                _ = zone.instant(on: date(2100, 3, 14), at: hm("02:30"))
            }
        }
        #expect(parsed > 0)  // some mutations hit only the v1 block or padding
    }

    @Test func wrongMagicIsRejected() {
        var b = TZifBuilder()
        b.magic = Array("TZiF".utf8)
        #expect(error(b) == .badMagic(offset: 0))
        var bytes = TZifBuilder().bytes
        bytes[44 + 7] = UInt8(ascii: "X")  // the second header, after a 7-byte v1 block
        #expect(throws: TZifError.badMagic(offset: 51)) { try TZif.parse(bytes, name: "x") }
    }

    @Test(arguments: [UInt8(0x31), 0x35, 0xFF, UInt8(ascii: "2") + 10])
    func unknownVersionsAreRejected(version: UInt8) {
        var b = TZifBuilder()
        b.version = version
        #expect(error(b) == .unsupportedVersion(version))
    }

    @Test func absurdCountsAreBoundedBeforeAnySizeIsComputed() {
        let cases: [(Int, UInt32, String, Int)] = [
            (3, 0xFFFF_FFFF, "timecnt", TZif.maximumTransitions),
            (3, 4097, "timecnt", TZif.maximumTransitions),
            (4, 257, "typecnt", TZif.maximumTypes),
            (5, 0xFFFF_FFFF, "charcnt", TZif.maximumAbbreviationBytes),
            (2, 0x8000_0000, "leapcnt", TZif.maximumTransitions),
            (0, 0xFFFF_FFFF, "isutcnt", TZif.maximumTypes),
        ]
        for (index, value, field, limit) in cases {
            var b = TZifBuilder()
            b.countOverride = [index: value]
            #expect(error(b) == .countTooLarge(field: field, value: value, limit: limit))
        }
    }

    @Test func countsPointingPastTheEndAreTruncated() {
        var b = TZifBuilder()
        b.countOverride = [3: 100]  // 100 transitions announced, 2 present
        guard case .truncated(what: "data block", _, _)? = error(b) else { Issue.record("\(String(describing: error(b)))"); return }
        b = TZifBuilder()
        b.countOverride = [5: 1000]
        guard case .truncated? = error(b) else { Issue.record("\(String(describing: error(b)))"); return }
    }

    @Test func inconsistentCountsAreRejected() {
        var b = TZifBuilder()
        b.countOverride = [4: 0]
        #expect(error(b) == .invalidCounts("typecnt is zero"))
        b = TZifBuilder()
        b.countOverride = [0: 1]
        #expect(error(b) == .invalidCounts("isutcnt is neither 0 nor typecnt"))
        b = TZifBuilder()
        b.countOverride = [1: 3]
        #expect(error(b) == .invalidCounts("isstdcnt is neither 0 nor typecnt"))
        b = TZifBuilder()
        b.chars = []
        b.types = [(0, 0, 0)]
        b.transitionTypes = [0, 0]
        #expect(error(b) == .invalidCounts("charcnt is zero"))
    }

    @Test func leapSecondFilesAreRejected() throws {
        var b = TZifBuilder()
        b.leapRecords = 1
        #expect(error(b) == .leapSecondsUnsupported)
        #expect(throws: ZoneLoadError.invalidData("right/UTC", .leapSecondsUnsupported)) { try Zones.directory.load("right/UTC") }
    }

    @Test func transitionsMustAscendAndStayInRange() {
        var b = TZifBuilder()
        b.transitions = [200, 200]
        #expect(error(b) == .invalidTransition(index: 1))
        b.transitions = [300, 200]
        #expect(error(b) == .invalidTransition(index: 1))
        b.transitions = [Int64.min, 0]
        #expect(error(b) == .invalidTransition(index: 0))
        b.transitions = [0, (1 << 59) + 1]
        #expect(error(b) == .invalidTransition(index: 1))
        b.transitions = [-(1 << 59), 0]  // zic's big bang is fine
        #expect(error(b) == nil)
    }

    @Test func localTimeTypesAreChecked() {
        var b = TZifBuilder()
        b.transitionTypes = [2, 0]
        #expect(error(b) == .typeIndexOutOfRange(index: 0, type: 2))
        b = TZifBuilder()
        b.types[1].0 = Int32.min
        #expect(error(b) == .invalidOffset(type: 1, seconds: Int32.min))
        b.types[1].0 = 93_600
        #expect(error(b) == .invalidOffset(type: 1, seconds: 93_600))
        b = TZifBuilder()
        b.types[0].1 = 2
        #expect(error(b) == .invalidDSTFlag(type: 0, value: 2))
        b = TZifBuilder()
        b.types[1].2 = 8  // == charcnt
        #expect(error(b) == .invalidAbbreviation(type: 1))
        b = TZifBuilder()
        b.chars = Array("EST\0EDT".utf8)  // the last abbreviation lacks its NUL
        #expect(error(b) == .invalidAbbreviation(type: 1))
        b = TZifBuilder()
        b.chars = Array("EST\0E\u{1}T\0".utf8)
        #expect(error(b) == .invalidAbbreviation(type: 1))
    }

    @Test func footerMustBeThereAndParse() {
        var b = TZifBuilder()
        b.footer = nil
        #expect(error(b) == .invalidFooter("missing (no newline after the data block)"))
        b.footer = Array("\nEST5EDT,M3.2.0,M11.1.0".utf8)
        #expect(error(b) == .invalidFooter("no closing newline"))
        b.footer = Array("\nEST5\n\n".utf8)
        #expect(error(b) == .invalidFooter("bytes after the closing newline"))
        b.footer = Array("\nEST5EDT\n".utf8)
        guard case .invalidFooter? = error(b) else { Issue.record("DST without a rule parsed"); return }
        b.footer = Array("\nEST5\0EDT\n".utf8)
        guard case .invalidFooter? = error(b) else { Issue.record("NUL in the footer parsed"); return }
    }

    @Test func oversizedFilesAreRejectedUnread() {
        let bytes = TZifBuilder().bytes + [UInt8](repeating: 0, count: TZif.maximumFileSize)
        #expect(throws: TZifError.fileTooLarge(size: bytes.count, limit: TZif.maximumFileSize)) { try TZif.parse(bytes, name: "x") }
    }

    @Test func version2FileUsesTheTableThenTheFooter() throws {
        let zone = try parse(TZifBuilder())
        #expect(zone.localTime(at: 99_000).abbreviation == "EST")  // before the first transition: type 0
        #expect(zone.localTime(at: 150_000).abbreviation == "EDT")
        #expect(zone.localTime(at: 250_000).abbreviation == "EST")
        #expect(zone.localTime(at: ms("2030-07-01T00:00:00Z")).abbreviation == "EDT")  // the footer
    }

    @Test func emptyFooterKeepsTheLastType() throws {
        var b = TZifBuilder()
        b.footer = Array("\n\n".utf8)
        let zone = try parse(b)
        #expect(zone.localTime(at: ms("2030-07-01T00:00:00Z")).abbreviation == "EST")
    }

    @Test func version1FileIsReadFrom32BitTimes() throws {
        var b = TZifBuilder()
        b.version = 0
        b.transitions = [-100, 1_000_000_000]
        let zone = try parse(b)
        #expect(zone.localTime(at: -200_000).utcOffsetSeconds == -18000)
        #expect(zone.localTime(at: 0).utcOffsetSeconds == -14400)
        #expect(zone.localTime(at: 1_000_000_000_000).utcOffsetSeconds == -18000)
        #expect(zone.footer == nil)
    }

    @Test func withoutIndicatorsAndWithoutTransitions() throws {
        var b = TZifBuilder()
        b.indicators = false
        b.transitions = []
        b.transitionTypes = []
        b.footer = Array("\n<+0530>-5:30\n".utf8)
        let zone = try parse(b)
        #expect(zone.localTime(at: 0).utcOffsetSeconds == 19800)
        #expect(zone.localTime(at: 0).abbreviation == "+0530")
    }
}
