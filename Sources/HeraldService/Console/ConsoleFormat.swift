import HeraldCore
import HeraldPrimitives

/// Number and time formatting for console pages (no Foundation).
enum ConsoleFormat {
    /// `value` with `decimals` (0–3) decimal places, rounded half away from zero.
    static func fixed(_ value: Double, _ decimals: Int = 1) -> String {
        guard value.isFinite else { return "?" }
        let scale = [1.0, 10, 100, 1000][min(max(decimals, 0), 3)]
        let scaled = Int((abs(value) * scale).rounded())
        let sign = value < 0 && scaled != 0 ? "-" : ""
        guard decimals > 0 else { return "\(sign)\(scaled)" }
        let whole = scaled / Int(scale)
        var fraction = String(scaled % Int(scale))
        while fraction.count < decimals { fraction = "0" + fraction }
        return "\(sign)\(whole).\(fraction)"
    }

    /// A rate 0…1 as a percentage with one decimal: "41.2 %".
    static func percent(_ rate: Double) -> String { fixed(rate * 100) + " %" }

    /// RFC 3339 UTC, or "—" for nil.
    static func time(_ milliseconds: Int64?) -> String {
        guard let milliseconds else { return "—" }
        return RFC3339.format(Timestamp(milliseconds: milliseconds))
    }

    /// "3 h 04 min", "12 min 05 s", "42 s".
    static func duration(seconds: Int64) -> String {
        let s = max(0, seconds)
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        if s >= 86_400 { return "\(s / 86_400) d \(two(s % 86_400 / 3600)) h" }
        if s >= 3600 { return "\(s / 3600) h \(two(s % 3600 / 60)) min" }
        if s >= 60 { return "\(s / 60) min \(two(s % 60)) s" }
        return "\(s) s"
    }

    /// Milliseconds as "850 ms" or "12.3 s".
    static func milliseconds(_ ms: Int64) -> String {
        ms < 1000 ? "\(ms) ms" : fixed(Double(ms) / 1000) + " s"
    }

    /// `text` cut to at most `limit` characters, keeping its start and end
    /// around an ellipsis (a device token stays recognisable; a page stays
    /// small whatever the data).
    static func clip(_ text: String, _ limit: Int = 80) -> String {
        guard text.count > limit, limit >= 8 else { return text }
        let tail = limit / 4
        return String(text.prefix(limit - tail - 1)) + "…" + String(text.suffix(tail))
    }
}
