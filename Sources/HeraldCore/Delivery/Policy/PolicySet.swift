/// Every bundle's delivery policy: an immutable lookup from bundle id to
/// its ``PolicyRules``, built from specs (flags, config-file lines, a
/// policies file). A bundle is in at most one spec.
public struct PolicySet: Sendable, Hashable {
    /// The specs in the order given.
    public let rules: [PolicyRules]
    private let byBundle: [String: Int]

    /// No policy for any bundle.
    public static let empty = PolicySet(uncheckedRules: [], byBundle: [:])

    private init(uncheckedRules rules: [PolicyRules], byBundle: [String: Int]) {
        self.rules = rules
        self.byBundle = byBundle
    }

    /// The set of `rules`; a bundle named by two specs is an error naming
    /// both (by `origins[i]`, e.g. `policies.txt line 3`, else `spec i+1`).
    public init(_ rules: [PolicyRules], origins: [String] = []) throws(PolicySpecError) {
        func origin(_ i: Int) -> String { i < origins.count ? origins[i] : "spec \(i + 1)" }
        var byBundle: [String: Int] = [:]
        for (index, spec) in rules.enumerated() {
            for bundle in spec.bundles {
                if let other = byBundle[bundle] {
                    throw PolicySpecError(
                        key: "bundles", value: Substring(bundle),
                        "the bundle has two policies: \(origin(other)) and \(origin(index))")
                }
                byBundle[bundle] = index
            }
        }
        self.init(uncheckedRules: rules, byBundle: byBundle)
    }

    /// The policy of `bundleID`, or nil when it has none.
    public func rules(for bundleID: String) -> PolicyRules? {
        byBundle[bundleID].map { rules[$0] }
    }

    /// Whether no bundle has a policy.
    public var isEmpty: Bool { rules.isEmpty }

    /// Each bundle's canonical spec, by bundle id (what Status shows).
    public var canonicalByBundle: [String: String] {
        byBundle.mapValues { rules[$0].canonical }
    }

    /// The longest cap period of any spec (ms; 0 without caps).
    /// Each throttled bundle's `max-per-second`.
    public var rates: [String: Int] {
        var rates: [String: Int] = [:]
        for rules in self.rules {
            guard let rate = rules.maxPerSecond else { continue }
            for bundle in rules.bundles { rates[bundle] = rate }
        }
        return rates
    }

    public var longestCapPeriodMilliseconds: Int64 { rules.map(\.longestCapPeriodMilliseconds).max() ?? 0 }

    /// The most lines a policies file may have.
    public static let maximumFileLines = 100_000

    /// Parses a policies file's text: one spec per line; `#` starts a
    /// comment (to the end of the line; no key or value contains `#`);
    /// blank lines are skipped. An error names the line number and the key. Each
    /// spec comes with its line number.
    public static func parseFile(
        _ text: String, zoneProblem: (String) -> String?
    ) throws(PolicySpecError) -> [(line: Int, rules: PolicyRules)] {
        var specs: [(line: Int, rules: PolicyRules)] = []
        var number = 0
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            guard number <= maximumFileLines else {
                throw PolicySpecError(key: nil, "the file has more than \(maximumFileLines) lines", line: number)
            }
            var line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            if line.last == "\r" { line = line.dropLast() }
            if line.allSatisfy({ $0 == " " || $0 == "\t" }) { continue }
            do { specs.append((number, try PolicyRules.parse(String(line), zoneProblem: zoneProblem))) } catch { throw error.at(line: number) }
        }
        return specs
    }
}
