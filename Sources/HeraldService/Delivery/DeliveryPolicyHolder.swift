public import HeraldCore
import HeraldPrimitives
import Synchronization
public import TimeZones

/// The bundles' delivery policies in force: one immutable ``PolicySet``
/// swapped whole by a SIGHUP reload. The dispatcher reads it per claim
/// (``rules(for:)``: one lock, one dictionary lookup), so a reload applies
/// to every push not yet sent and never to half a set.
public final class DeliveryPolicyHolder: Sendable {
    private let state: Mutex<PolicySet>

    /// A holder starting with `set` (no policy by default).
    public init(_ set: PolicySet = .empty) {
        state = Mutex(set)
    }

    /// The set in force now.
    public var current: PolicySet { state.withLock { $0 } }

    /// The policy of `bundleID` in force now, or nil.
    public func rules(for bundleID: String) -> PolicyRules? {
        state.withLock { $0.rules(for: bundleID) }
    }

    /// Puts `set` in force (whole, at once) and says which bundles gained,
    /// lost or changed their policy.
    @discardableResult
    public func replace(with set: PolicySet) -> PolicyChanges {
        let old = state.withLock { current in
            defer { current = set }
            return current
        }
        return PolicyChanges(from: old, to: set)
    }
}

/// Which bundles a policy reload touched, for its log line.
public struct PolicyChanges: Sendable, Hashable {
    /// Bundles with a policy now and none before.
    public var added: [String]
    /// Bundles with no policy any more.
    public var removed: [String]
    /// Bundles whose policy changed.
    public var changed: [String]

    /// The differences from `old` to `new`, each sorted.
    public init(from old: PolicySet, to new: PolicySet) {
        let before = old.canonicalByBundle, after = new.canonicalByBundle
        added = after.keys.filter { before[$0] == nil }.sorted()
        removed = before.keys.filter { after[$0] == nil }.sorted()
        changed = after.compactMap { bundle, spec in before[bundle].map { $0 == spec ? nil : bundle } ?? nil }.sorted()
    }
}

/// Where the delivery policies come from: specs given as
/// `--delivery-policy` flags or config-file lines (fixed at start) and a
/// `--delivery-policies-file` (re-read by SIGHUP).
public struct DeliveryPolicySources: Sendable, Hashable {
    /// The specs given as flags or config-file lines.
    public var specs: [String]
    /// The policies file, if any.
    public var file: String?

    /// The largest policies file read (bytes).
    public static let maximumFileBytes = 4 << 20

    /// Sources of `specs` and `file`.
    public init(specs: [String] = [], file: String? = nil) {
        self.specs = specs
        self.file = file
    }

    /// Whether no policy is configured at all.
    public var isEmpty: Bool { specs.isEmpty && file == nil }

    /// Parses every spec and the file (each zone checked against
    /// `zones`) into one set; an error names the spec or the file and line,
    /// and the key.
    public func load(zones: ZoneInfoDirectory = ZoneInfoDirectory()) throws(DeliveryPolicyError) -> PolicySet {
        let zoneProblem = Self.zoneProblem(zones)
        var rules: [PolicyRules] = []
        var origins: [String] = []
        for spec in specs {
            do { rules.append(try PolicyRules.parse(spec, zoneProblem: zoneProblem)) } catch {
                throw DeliveryPolicyError(description: "delivery-policy: \(error)")
            }
            origins.append("delivery-policy \(PolicySpecError.quote(Substring(spec)))")
        }
        if let file {
            var isDirectory = false
            guard POSIXFile.exists(file, isDirectory: &isDirectory), !isDirectory else {
                throw DeliveryPolicyError(description: "cannot read delivery policies file \(file): no such file")
            }
            guard let bytes = POSIXFile.readPrefix(file, count: Self.maximumFileBytes + 1) else {
                throw DeliveryPolicyError(description: "cannot read delivery policies file \(file)")
            }
            guard bytes.count <= Self.maximumFileBytes else {
                throw DeliveryPolicyError(description: "delivery policies file \(file): larger than \(Self.maximumFileBytes) bytes")
            }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw DeliveryPolicyError(description: "delivery policies file \(file): not UTF-8")
            }
            do {
                for spec in try PolicySet.parseFile(text, zoneProblem: zoneProblem) {
                    rules.append(spec.rules)
                    origins.append("\(file) line \(spec.line)")
                }
            } catch {
                throw DeliveryPolicyError(description: "delivery policies file \(file): \(error)")
            }
        }
        do { return try PolicySet(rules, origins: origins) } catch {
            throw DeliveryPolicyError(description: "delivery policies: \(error)")
        }
    }

    /// The zone check the parser is given: nil when `name` loads from
    /// `zones`, else why not.
    public static func zoneProblem(_ zones: ZoneInfoDirectory = ZoneInfoDirectory()) -> (String) -> String? {
        { name in
            do {
                _ = try zones.load(name)
                return nil
            } catch {
                return String(describing: error)
            }
        }
    }
}

/// A delivery policy Herald refuses (start-up stops; a reload keeps the set
/// in force): one line naming the source, the line and the key.
public struct DeliveryPolicyError: Error, Sendable, CustomStringConvertible {
    public var description: String
}
