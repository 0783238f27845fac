import HeraldPrimitives
import TimeZones

extension PolicyRules {
    /// The longest spec line accepted, in bytes.
    public static let maximumLineBytes = 4096
    /// The most `cap=` (and, separately, `campaign-cap=`) keys in one spec.
    public static let maximumCaps = 8
    /// The largest `max-per-second`.
    public static let maximumPerSecond = 1_000_000

    /// The keys a spec may have; `cap` and `campaign-cap` may repeat.
    public static let keys = ["bundles", "timezone", "quiet-hours", "cap", "campaign-cap", "max-per-second"]

    /// Parses one spec line, strictly: `key=value` fields separated by
    /// spaces or tabs, each key known, none but `cap` and `campaign-cap`
    /// repeated, `bundles=` required. `zoneProblem` checks that a
    /// well-formed `timezone` exists (the core reads no files): nil when it
    /// does, else why not.
    ///
    /// Refused (the error names the key and quotes the value): a line over
    /// ``maximumLineBytes``, NUL or other control bytes; a field without
    /// `=`; an unknown or repeated key; an empty or invalid bundle, or one
    /// named twice; a zone name that is malformed or does not exist;
    /// quiet hours not exactly `HH:MM-HH:MM` (00:00–23:59; `24:00`, `7:5`
    /// refused) or empty (start = end: empty or the whole day, ambiguous);
    /// a cap not `N/<int>(s|m|h|d)`, N outside 1…1000000, a period outside
    /// 1 s…366 d (`0h`, overflow), two caps of one kind over the same
    /// period, more than ``maximumCaps``; `max-per-second` outside
    /// 1…``maximumPerSecond``.
    public static func parse(_ line: String, zoneProblem: (String) -> String?) throws(PolicySpecError) -> PolicyRules {
        let bytes = line.utf8
        guard bytes.count <= maximumLineBytes else {
            throw PolicySpecError(key: nil, "the spec is \(bytes.count) bytes, more than the limit of \(maximumLineBytes)")
        }
        if let bad = bytes.first(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
            throw PolicySpecError(key: nil, bad == 0 ? "the spec contains NUL" : "the spec contains a control byte (0x\(String(bad, radix: 16)))")
        }
        var bundles: [String]?
        var timezone: String?
        var quietHours: QuietPeriod?
        var maxPerSecond: Int?
        var caps: [FrequencyCap] = [], campaignCaps: [FrequencyCap] = []
        var seen = Set<Substring>()
        for field in line.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
            guard let equals = field.firstIndex(of: "=") else {
                throw PolicySpecError(key: nil, value: field, "expected key=value (keys: \(keys.joined(separator: ", ")))")
            }
            let key = field[..<equals], value = field[field.index(after: equals)...]
            let name = String(key)
            guard keys.contains(name) else {
                throw PolicySpecError(key: name, value: value, "unknown key (keys: \(keys.joined(separator: ", ")))")
            }
            let repeatable = key == "cap" || key == "campaign-cap"
            guard repeatable || seen.insert(key).inserted else { throw PolicySpecError(key: name, value: value, "given twice") }
            guard !value.isEmpty else { throw PolicySpecError(key: name, "empty value") }
            switch key {
            case "bundles": bundles = try parseBundles(value)
            case "timezone": timezone = try parseZone(value, zoneProblem: zoneProblem)
            case "quiet-hours": quietHours = try parseQuietHours(value)
            case "cap": caps = try appending(parseCap(value, key: name), to: caps, key: name, value: value)
            case "campaign-cap": campaignCaps = try appending(parseCap(value, key: name), to: campaignCaps, key: name, value: value)
            default:  // max-per-second
                guard let rate = parseNumber(value), (1...maximumPerSecond).contains(rate) else {
                    throw PolicySpecError(key: name, value: value, "must be an integer 1...\(maximumPerSecond)")
                }
                maxPerSecond = rate
            }
        }
        guard let bundles else { throw PolicySpecError(key: "bundles", "required (bundles=com.example.app[,…])") }
        return PolicyRules(
            bundles: bundles, timezone: timezone, quietHours: quietHours, caps: caps, campaignCaps: campaignCaps,
            maxPerSecond: maxPerSecond)
    }

    private static func parseBundles(_ value: Substring) throws(PolicySpecError) -> [String] {
        var bundles: [String] = []
        var seen = Set<String>()
        for part in value.split(separator: ",", omittingEmptySubsequences: false) {
            let bundle = String(part)
            guard !bundle.isEmpty else { throw PolicySpecError(key: "bundles", value: value, "an empty bundle id") }
            if let problem = Validator.bundleIDProblem(bundle) {
                throw PolicySpecError(key: "bundles", value: part, "bundle id \(problem)")
            }
            guard seen.insert(bundle).inserted else { throw PolicySpecError(key: "bundles", value: part, "bundle named twice") }
            bundles.append(bundle)
        }
        return bundles
    }

    private static func parseZone(_ value: Substring, zoneProblem: (String) -> String?) throws(PolicySpecError) -> String {
        let name = String(value)
        do { _ = try ZoneName(name) } catch {
            if case let .invalidName(_, reason) = error { throw PolicySpecError(key: "timezone", value: value, "not a time zone name: \(reason)") }
            throw PolicySpecError(key: "timezone", value: value, "\(error)")
        }
        if let problem = zoneProblem(name) { throw PolicySpecError(key: "timezone", value: value, problem) }
        return name
    }

    private static func parseQuietHours(_ value: Substring) throws(PolicySpecError) -> QuietPeriod {
        let parts = value.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = TimeOfDay(parsing: parts[0]), let end = TimeOfDay(parsing: parts[1]) else {
            throw PolicySpecError(key: "quiet-hours", value: value, "expected HH:MM-HH:MM, each 00:00...23:59 (e.g. 22:00-08:00)")
        }
        guard let period = QuietPeriod(start: start, end: end) else {
            throw PolicySpecError(key: "quiet-hours", value: value, "start and end are equal: empty or the whole day, ambiguous")
        }
        return period
    }

    private static func parseCap(_ value: Substring, key: String) throws(PolicySpecError) -> FrequencyCap {
        let parts = value.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let count = parseNumber(parts[0]), let unit = parts[1].last,
              let amount = parseNumber(parts[1].dropLast()) else {
            throw PolicySpecError(key: key, value: value, "expected N/PERIOD, PERIOD an integer with s, m, h or d (e.g. 3/24h)")
        }
        let unitMilliseconds: Int64
        switch unit {
        case "s": unitMilliseconds = 1000
        case "m": unitMilliseconds = 60_000
        case "h": unitMilliseconds = 3_600_000
        case "d": unitMilliseconds = 86_400_000
        default: throw PolicySpecError(key: key, value: value, "the period's unit must be s, m, h or d")
        }
        guard (1...FrequencyCap.maximumCount).contains(count) else {
            throw PolicySpecError(key: key, value: value, "the count must be 1...\(FrequencyCap.maximumCount)")
        }
        let (period, overflow) = Int64(amount).multipliedReportingOverflow(by: unitMilliseconds)
        guard !overflow, let cap = FrequencyCap(count: count, periodMilliseconds: period) else {
            throw PolicySpecError(key: key, value: value, "the period must be 1s...366d")
        }
        return cap
    }

    private static func appending(
        _ cap: FrequencyCap, to caps: [FrequencyCap], key: String, value: Substring
    ) throws(PolicySpecError) -> [FrequencyCap] {
        guard caps.count < maximumCaps else { throw PolicySpecError(key: key, value: value, "more than \(maximumCaps) of this key") }
        guard !caps.contains(where: { $0.periodMilliseconds == cap.periodMilliseconds }) else {
            throw PolicySpecError(key: key, value: value, "another \(key) has the same period")
        }
        return caps + [cap]
    }

    /// A decimal integer of ASCII digits only (no sign, no spaces); nil
    /// otherwise. Saturates at `Int.max` (a huge number is out of range,
    /// never an overflow).
    private static func parseNumber(_ text: Substring) -> Int? {
        guard !text.isEmpty else { return nil }
        var value = 0
        for c in text.utf8 {
            guard c >= 0x30 && c <= 0x39 else { return nil }
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(Int(c - 0x30))
            value = o1 || o2 ? Int.max : sum
        }
        return value
    }
}
