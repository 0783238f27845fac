/// One quiet period inside a context-aware hand-off's window (SPEC §4b): the
/// app's SDK must not display the notification in [start, end).
/// Milliseconds since the epoch; the payload carries them as epoch seconds
/// (`ctx_quiet`, docs/APP-CONTRACT.md).
public struct QuietSpan: Sendable, Hashable {
    public var start: Int64
    public var end: Int64

    public init(start: Int64, end: Int64) {
        self.start = start
        self.end = end
    }

    /// The start in epoch seconds, floored.
    public var startSeconds: Int64 { start.floorDividing(1000) }
    /// The end in epoch seconds, rounded up.
    public var endSeconds: Int64 { (end + 999).floorDividing(1000) }

    /// `[[start,end],…]` in epoch seconds (FCM data values are strings).
    public static func json(_ spans: [QuietSpan]) -> String {
        "[" + spans.map { "[\($0.startSeconds),\($0.endSeconds)]" }.joined(separator: ",") + "]"
    }
}

extension Int64 {
    fileprivate func floorDividing(_ d: Int64) -> Int64 {
        let q = self / d
        return (self % d != 0 && (self < 0) != (d < 0)) ? q - 1 : q
    }
}
