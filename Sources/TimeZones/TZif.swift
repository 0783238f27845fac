/// The TZif reader (RFC 8536, versions 1–4): bytes in, ``ZoneRules`` out.
///
/// Version 2+ files are read from their 64-bit data block and footer (the
/// 32-bit version-1 block is only skipped); version-1 files from their
/// 32-bit block, without a footer. Every count is bounded before any size
/// is computed, every read is checked against the end of the file, and
/// every malformation is a ``TZifError``.
public enum TZif {
    /// The largest file accepted (the largest zone in tzdata 2025b, "fat",
    /// is under 4 KiB).
    public static let maximumFileSize = 64 * 1024
    /// The most transitions accepted (tzdata's fat files hold under 300).
    public static let maximumTransitions = 4096
    /// The most local time types (a transition's type index is one byte).
    public static let maximumTypes = 256
    /// The most abbreviation bytes.
    public static let maximumAbbreviationBytes = 1024
    /// Transition times are accepted within ±2^59 s (zic's "big bang" is −2^59).
    static let transitionLimit: Int64 = 1 << 59

    /// Parses a TZif file. `name` is kept for messages (``ZoneRules/name``).
    public static func parse(_ bytes: [UInt8], name: String) throws(TZifError) -> ZoneRules {
        guard bytes.count <= maximumFileSize else { throw .fileTooLarge(size: bytes.count, limit: maximumFileSize) }
        let first = try Header(bytes, at: 0)
        guard first.version == 0 else {
            let secondAt = 44 + first.dataLength(timeSize: 4)
            guard secondAt <= bytes.count else { throw .truncated(what: "version 1 data block", offset: 44, needed: secondAt - 44) }
            let second = try Header(bytes, at: secondAt)
            guard second.version == first.version else { throw .invalidCounts("the second header's version differs from the first's") }
            var reader = Reader(bytes: bytes, at: secondAt + 44)
            let block = try reader.dataBlock(second, timeSize: 8)
            let footer = try reader.footer()
            return ZoneRules(name: name, block: block, footer: footer)
        }
        var reader = Reader(bytes: bytes, at: 44)
        return ZoneRules(name: name, block: try reader.dataBlock(first, timeSize: 4), footer: nil)
    }
}
