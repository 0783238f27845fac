/// One IANA time zone's rules, read from its TZif file: the listed
/// transitions and, after the last, the footer's POSIX TZ rule.
///
/// Pure and immutable (`Sendable`): load it once, share it, and convert
/// with the methods of `ZoneRules+WallClock.swift` and
/// `ZoneRules+QuietPeriod.swift`. Instants are milliseconds since the UNIX
/// epoch (`Int64`, like HeraldCore), clamped to years 1–9999.
public struct ZoneRules: Sendable {
    /// The zone's name as loaded (`Europe/Berlin`), for messages.
    public let name: String
    /// Transition instants (UNIX seconds), strictly ascending.
    let transitions: [Int64]
    /// The local time type index in effect from each transition on.
    let transitionTypes: [UInt8]
    /// The local time types (at least one; type 0 is in effect before the first transition).
    let types: [LocalTimeType]
    /// The rule after the last transition, when the file has one.
    let footer: POSIXTimeZone?
    /// The smallest and largest UTC offsets the zone ever uses (seconds).
    let minimumOffset: Int64, maximumOffset: Int64

    init(name: String, block: TZif.DataBlock, footer: POSIXTimeZone?) {
        self.name = name
        transitions = block.transitions
        transitionTypes = block.transitionTypes
        types = block.types
        self.footer = footer
        var offsets = block.types.map { Int64($0.utcOffsetSeconds) }
        if let footer {
            offsets.append(Int64(footer.standard.utcOffsetSeconds))
            if let d = footer.daylight { offsets.append(Int64(d.type.utcOffsetSeconds)) }
        }
        minimumOffset = offsets.min() ?? 0
        maximumOffset = offsets.max() ?? 0
    }

    /// The earliest and latest instants handled (0001-01-01T00:00:00Z and
    /// 9999-12-31T23:59:59.999Z); others are clamped to them.
    public static let supportedMilliseconds: ClosedRange<Int64> =
        (LocalDate.firstDay * 86_400_000)...((LocalDate.lastDay + 1) * 86_400_000 - 1)

    /// The local time type in effect at `second` (UNIX seconds).
    func type(atSecond second: Int64) -> LocalTimeType {
        guard let last = transitions.last else { return footer?.type(atSecond: second) ?? types[0] }
        if second < transitions[0] { return types[0] }
        if second >= last, let footer { return footer.type(atSecond: second) }
        return types[Int(transitionTypes[firstTransition(after: second) - 1])]
    }

    /// The first transition strictly after `second`: a listed one, else
    /// one of the footer's rule; nil when the offset never changes again.
    func nextTransition(afterSecond second: Int64) -> Int64? {
        if let last = transitions.last, second < last { return transitions[firstTransition(after: second)] }
        return footer?.nextTransition(afterSecond: second)
    }

    /// The index of the first listed transition after `second` (binary search).
    private func firstTransition(after second: Int64) -> Int {
        var low = 0, high = transitions.count
        while low < high {
            let mid = (low + high) / 2
            if transitions[mid] <= second { low = mid + 1 } else { high = mid }
        }
        return low
    }

    static func clamp(_ ms: Int64) -> Int64 { min(max(ms, supportedMilliseconds.lowerBound), supportedMilliseconds.upperBound) }

    static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }
}
