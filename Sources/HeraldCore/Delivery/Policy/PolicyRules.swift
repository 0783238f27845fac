public import TimeZones

/// One bundle group's delivery policy (SPEC §4b), parsed from a spec line:
///
///     bundles=com.a,com.b timezone=Europe/Berlin quiet-hours=22:00-08:00 cap=3/24h cap=10/7d campaign-cap=1/7d max-per-second=500
///
/// Every rule but `bundles` is optional. Immutable; ``parse(_:zoneProblem:)``
/// (PolicyRules+Parse.swift) is the only way in from text, and the
/// grammar is in docs/DELIVERY-POLICY.md.
public struct PolicyRules: Sendable, Hashable {
    /// The bundles it applies to (at least one, no repeats), in spec order.
    public let bundles: [String]
    /// The default zone name for devices without a usable zone of their
    /// own; nil: UTC.
    public let timezone: String?
    /// Quiet hours in each device's local time; nil: none.
    public let quietHours: QuietPeriod?
    /// Caps per user of the bundle, shortest period first.
    public let caps: [FrequencyCap]
    /// Caps per user and campaign, shortest period first.
    public let campaignCaps: [FrequencyCap]
    /// The bundle's pushes per second, all replicas together (the store's
    /// throttle enforces it; the verdict does not read it); nil: none.
    public let maxPerSecond: Int?

    /// Rules built in code (tests, benches): `caps` and `campaignCaps` are
    /// sorted by period; nothing else is checked (the parser checks text).
    public init(
        bundles: [String], timezone: String? = nil, quietHours: QuietPeriod? = nil, caps: [FrequencyCap] = [],
        campaignCaps: [FrequencyCap] = [], maxPerSecond: Int? = nil
    ) {
        self.bundles = bundles
        self.timezone = timezone
        self.quietHours = quietHours
        self.caps = caps.sorted { $0.periodMilliseconds < $1.periodMilliseconds }
        self.campaignCaps = campaignCaps.sorted { $0.periodMilliseconds < $1.periodMilliseconds }
        self.maxPerSecond = maxPerSecond
    }

    /// The normalized spec line (what Status shows): keys in a fixed order,
    /// caps by period in their largest exact unit; parsing it gives equal rules.
    public var canonical: String {
        var parts = ["bundles=" + bundles.joined(separator: ",")]
        if let timezone { parts.append("timezone=" + timezone) }
        if let quietHours { parts.append("quiet-hours=\(quietHours)") }
        parts += caps.map { "cap=\($0)" }
        parts += campaignCaps.map { "campaign-cap=\($0)" }
        if let maxPerSecond { parts.append("max-per-second=\(maxPerSecond)") }
        return parts.joined(separator: " ")
    }

    /// Whether any rule holds pushes (quiet hours or a cap); the throttle
    /// and the default zone alone hold nothing in the verdict.
    public var holdsPushes: Bool { quietHours != nil || !caps.isEmpty || !campaignCaps.isEmpty }

    /// The longest cap period (ms): how far back a user's counted sends
    /// matter; 0 without caps.
    public var longestCapPeriodMilliseconds: Int64 {
        (caps + campaignCaps).map(\.periodMilliseconds).max() ?? 0
    }
}
