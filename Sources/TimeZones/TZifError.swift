/// Why bytes are not a usable TZif file (RFC 8536) or its footer is not a
/// usable POSIX TZ string. Every malformed input ends in one of these;
/// the reader never traps on input.
public enum TZifError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file is larger than ``TZif/maximumFileSize``.
    case fileTooLarge(size: Int, limit: Int)
    /// The file ends before `what` (which needs `needed` bytes at `offset`).
    case truncated(what: String, offset: Int, needed: Int)
    /// The (first or second) header does not start with `TZif`.
    case badMagic(offset: Int)
    /// The version byte is not NUL, `2`, `3` or `4`.
    case unsupportedVersion(UInt8)
    /// A header count is above the reader's bound (or the RFC's).
    case countTooLarge(field: String, value: UInt32, limit: Int)
    /// Header counts that contradict each other or RFC 8536's rules.
    case invalidCounts(String)
    /// Leap-second records ("right/" zones): Herald's time line has none.
    case leapSecondsUnsupported
    /// Transition `index` is not later than the one before it, or out of range.
    case invalidTransition(index: Int)
    /// Transition `index` names local time type `type`, which does not exist.
    case typeIndexOutOfRange(index: Int, type: Int)
    /// Local time type `type` has an offset outside −25:59:59…+25:59:59.
    case invalidOffset(type: Int, seconds: Int32)
    /// Local time type `type` has an is-DST byte other than 0 or 1.
    case invalidDSTFlag(type: Int, value: UInt8)
    /// Local time type `type`'s abbreviation index is past the table, lacks
    /// its NUL, or holds a byte that is not printable ASCII.
    case invalidAbbreviation(type: Int)
    /// The footer (the POSIX TZ string after the data) is missing or does
    /// not parse; `reason` says where.
    case invalidFooter(String)

    public var description: String {
        switch self {
        case let .fileTooLarge(size, limit): return "TZif file of \(size) bytes is larger than the \(limit)-byte limit"
        case let .truncated(what, offset, needed): return "TZif file ends inside \(what) (\(needed) bytes at offset \(offset))"
        case let .badMagic(offset): return "no TZif magic at offset \(offset)"
        case let .unsupportedVersion(v): return "unsupported TZif version byte \(v)"
        case let .countTooLarge(field, value, limit): return "TZif \(field) \(value) is above the limit \(limit)"
        case let .invalidCounts(reason): return "TZif header counts: \(reason)"
        case .leapSecondsUnsupported: return "TZif file has leap-second records (a right/ zone), which are not supported"
        case let .invalidTransition(index): return "TZif transition \(index) is not after the previous one or out of range"
        case let .typeIndexOutOfRange(index, type): return "TZif transition \(index) names local time type \(type), which does not exist"
        case let .invalidOffset(type, seconds): return "TZif local time type \(type) has the out-of-range offset \(seconds) s"
        case let .invalidDSTFlag(type, value): return "TZif local time type \(type) has the is-DST byte \(value)"
        case let .invalidAbbreviation(type): return "TZif local time type \(type) has an invalid abbreviation"
        case let .invalidFooter(reason): return "TZif footer: \(reason)"
        }
    }
}
