import HeraldPrimitives
@testable import TimeZones

/// UNIX milliseconds of an RFC 3339 timestamp (test tables stay readable).
func ms(_ text: String) -> Int64 {
    let t = try! RFC3339.parse(text)
    return t.seconds * 1000 + Int64(t.nanoseconds) / 1_000_000
}

/// RFC 3339 UTC text of UNIX milliseconds (for failure messages).
func utc(_ milliseconds: Int64) -> String {
    var s = milliseconds / 1000, r = milliseconds % 1000
    if r < 0 { s -= 1; r += 1000 }
    return RFC3339.format(Timestamp(seconds: s, nanoseconds: Int32(r) * 1_000_000))
}

func date(_ y: Int, _ m: Int, _ d: Int) -> LocalDate { LocalDate(year: y, month: m, day: d)! }
func hm(_ text: String) -> TimeOfDay { TimeOfDay(parsing: text)! }

/// `YYYY-MM-DD HH:MM:SS[.mmm]` of a local time.
func wall(_ t: LocalTime) -> String {
    func p(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
    let msPart = t.millisecondsIntoDay % 1000
    return "\(t.date) \(p(t.hour)):\(p(t.minute)):\(p(t.second))" + (msPart == 0 ? "" : ".\(msPart)")
}

/// The zones of the machine's tzdata (Debian), loaded once per use.
enum Zones {
    static let directory = ZoneInfoDirectory()
    static func load(_ name: String) -> ZoneRules { try! directory.load(name) }
}

/// Writes a TZif file: a minimal version-1 block, then a version-2+ header
/// and 64-bit block from the fields, then the footer. Count fields can be
/// overridden to build hostile headers.
struct TZifBuilder {
    var version: UInt8 = 0x32
    var transitions: [Int64] = [100, 200]
    var transitionTypes: [UInt8] = [1, 0]
    /// (utoff, isdst, abbreviation index)
    var types: [(Int32, UInt8, UInt8)] = [(-18000, 0, 0), (-14400, 1, 4)]
    var chars: [UInt8] = Array("EST\0EDT\0".utf8)
    var leapRecords = 0
    var indicators = true
    var footer: [UInt8]? = Array("\nEST5EDT,M3.2.0,M11.1.0\n".utf8)
    /// Header count index (0 isutcnt … 5 charcnt) -> value written instead.
    var countOverride: [Int: UInt32] = [:]
    var magic: [UInt8] = Array("TZif".utf8)

    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func be64(_ v: Int64) -> [UInt8] { let u = UInt64(bitPattern: v); return be32(UInt32(u >> 32)) + be32(UInt32(u & 0xFFFF_FFFF)) }

    func header(_ counts: [UInt32]) -> [UInt8] {
        magic + [version] + [UInt8](repeating: 0, count: 15) + counts.flatMap(Self.be32)
    }

    var bytes: [UInt8] {
        var out = header([0, 0, 0, 0, 1, 1]) + Self.be32(0) + [0, 0] + [0]  // v1: one type, one NUL
        if version == 0 { out = [] }
        let n = indicators ? UInt32(types.count) : 0
        var counts: [UInt32] = [n, n, UInt32(leapRecords), UInt32(transitions.count), UInt32(types.count), UInt32(chars.count)]
        for (i, v) in countOverride { counts[i] = v }
        out += header(counts)
        let timeSize = version == 0 ? 4 : 8
        for t in transitions { out += timeSize == 8 ? Self.be64(t) : Self.be32(UInt32(truncatingIfNeeded: t)) }
        out += transitionTypes
        for (off, dst, idx) in types { out += Self.be32(UInt32(bitPattern: off)) + [dst, idx] }
        out += chars
        for _ in 0..<leapRecords { out += [UInt8](repeating: 0, count: timeSize + 4) }
        if indicators { out += [UInt8](repeating: 0, count: 2 * types.count) }
        if version != 0, let footer { out += footer }
        return out
    }
}
