/// The recursive-descent parser behind ``POSIXTimeZone/init(parsing:)``.
struct POSIXTZParser {
    let bytes: [UInt8]
    var at = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    private func fail(_ what: String) -> TZifError { .invalidFooter("\(what) at byte \(at) of the TZ string") }
    private var peek: UInt8? { at < bytes.count ? bytes[at] : nil }
    private static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
    private static func isAlpha(_ c: UInt8) -> Bool { (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a }

    mutating func parse() throws(TZifError) -> POSIXTimeZone {
        guard bytes.count <= 255 else { throw TZifError.invalidFooter("TZ string longer than 255 bytes") }
        let stdName = try name()
        let stdOffset = -(try hms(maxHours: 24, signed: true, what: "standard offset"))
        let standard = LocalTimeType(utcOffsetSeconds: Int32(stdOffset), isDaylightSaving: false, abbreviation: stdName)
        if peek == nil { return POSIXTimeZone(standard: standard, daylight: nil) }
        let dstName = try name()
        var dstOffset = stdOffset + 3600
        if let c = peek, c != UInt8(ascii: ",") {
            dstOffset = -(try hms(maxHours: 24, signed: true, what: "daylight offset"))
        }
        guard peek == UInt8(ascii: ",") else { throw fail("expected ',' and the DST rules") }
        at += 1
        let start = try rule()
        guard peek == UInt8(ascii: ",") else { throw fail("expected ',' before the DST end rule") }
        at += 1
        let end = try rule()
        guard peek == nil else { throw fail("unexpected characters") }
        let daylight = LocalTimeType(utcOffsetSeconds: Int32(dstOffset), isDaylightSaving: true, abbreviation: dstName)
        return POSIXTimeZone(standard: standard, daylight: .init(type: daylight, start: start, end: end))
    }

    /// `<...>` (letters, digits, `+`, `-`) or 3+ letters.
    private mutating func name() throws(TZifError) -> String {
        let begin = at
        if peek == UInt8(ascii: "<") {
            at += 1
            while let c = peek, Self.isAlpha(c) || Self.isDigit(c) || c == UInt8(ascii: "+") || c == UInt8(ascii: "-") { at += 1 }
            guard peek == UInt8(ascii: ">") else { throw fail("expected '>' closing a quoted name") }
            at += 1
            guard at - begin - 2 >= 3 else { throw fail("a zone name needs 3 or more characters") }
            return String(decoding: bytes[(begin + 1)..<(at - 1)], as: UTF8.self)
        }
        while let c = peek, Self.isAlpha(c) { at += 1 }
        guard at - begin >= 3 else { throw fail("a zone name needs 3 or more letters") }
        return String(decoding: bytes[begin..<at], as: UTF8.self)
    }

    /// `[+-]hh[:mm[:ss]]` in seconds.
    private mutating func hms(maxHours: Int, signed: Bool, what: String) throws(TZifError) -> Int {
        var sign = 1
        if signed, let c = peek, c == UInt8(ascii: "+") || c == UInt8(ascii: "-") {
            sign = c == UInt8(ascii: "-") ? -1 : 1
            at += 1
        }
        let hours = try number(maxDigits: 3, what: what)
        guard hours <= maxHours else { throw fail("\(what) hours above \(maxHours)") }
        var minutes = 0, seconds = 0
        if peek == UInt8(ascii: ":") {
            at += 1
            minutes = try number(maxDigits: 2, what: what)
            guard minutes <= 59 else { throw fail("\(what) minutes above 59") }
            if peek == UInt8(ascii: ":") {
                at += 1
                seconds = try number(maxDigits: 2, what: what)
                guard seconds <= 59 else { throw fail("\(what) seconds above 59") }
            }
        }
        return sign * (hours * 3600 + minutes * 60 + seconds)
    }

    private mutating func number(maxDigits: Int, what: String) throws(TZifError) -> Int {
        var value = 0, count = 0
        while let c = peek, Self.isDigit(c) {
            guard count < maxDigits else { throw fail("too many digits in \(what)") }
            value = value * 10 + Int(c - 0x30)
            count += 1
            at += 1
        }
        guard count > 0 else { throw fail("expected digits in \(what)") }
        return value
    }

    private mutating func rule() throws(TZifError) -> POSIXTimeZone.Rule {
        let day: POSIXTimeZone.Rule.Day
        switch peek {
        case UInt8(ascii: "J"):
            at += 1
            let n = try number(maxDigits: 3, what: "Julian day")
            guard (1...365).contains(n) else { throw fail("Julian day outside 1…365") }
            day = .julianNoLeap(n)
        case UInt8(ascii: "M"):
            at += 1
            let m = try number(maxDigits: 2, what: "month")
            guard (1...12).contains(m), peek == UInt8(ascii: ".") else { throw fail("expected a month 1…12 and '.'") }
            at += 1
            let w = try number(maxDigits: 1, what: "week")
            guard (1...5).contains(w), peek == UInt8(ascii: ".") else { throw fail("expected a week 1…5 and '.'") }
            at += 1
            let d = try number(maxDigits: 1, what: "weekday")
            guard (0...6).contains(d) else { throw fail("weekday outside 0…6") }
            day = .monthWeekDay(month: m, week: w, weekday: d)
        case let c? where Self.isDigit(c):
            let n = try number(maxDigits: 3, what: "day")
            guard n <= 365 else { throw fail("day outside 0…365") }
            day = .zeroBased(n)
        default:
            throw fail("expected a rule date (Jn, n or Mm.w.d)")
        }
        var time: Int64 = 7200
        if peek == UInt8(ascii: "/") {
            at += 1
            time = Int64(try hms(maxHours: 167, signed: true, what: "rule time"))
        }
        return POSIXTimeZone.Rule(day: day, time: time)
    }
}
