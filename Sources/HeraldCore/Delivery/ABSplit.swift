/// The A/B assignment of a user to a delivery method, when the request
/// leaves it unspecified.
///
/// The hash is FNV-1a 64 (offset basis 0xcbf29ce484222325, prime
/// 0x100000001b3) over the UTF-8 bytes of `bundle_id + "\n" + user_id`. It is
/// fixed by this documentation: stable across processes, restarts, replicas
/// and machines (unlike Swift's per-process seeded `Hasher`). The top 53 bits
/// of the hash, as a fraction `u` in [0, 1), pick the cohort (FNV-1a's high
/// bits are the well-mixed ones): `u < contextAwareShare` → context-aware,
/// else traditional.
public struct ABSplit: Sendable, Hashable {
    /// The fraction of users in the context-aware cohort, clamped to [0, 1].
    public var contextAwareShare: Double

    /// The default 50/50 split.
    public static let `default` = ABSplit(contextAwareShare: 0.5)

    public init(contextAwareShare: Double = 0.5) {
        self.contextAwareShare = contextAwareShare.isNaN ? 0.5 : min(max(contextAwareShare, 0), 1)
    }

    /// FNV-1a 64 of `bundleID + "\n" + userID`.
    public static func hash(bundleID: String, userID: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        let prime: UInt64 = 0x0000_0100_0000_01b3
        for b in bundleID.utf8 { h = (h ^ UInt64(b)) &* prime }
        h = (h ^ 0x0A) &* prime
        for b in userID.utf8 { h = (h ^ UInt64(b)) &* prime }
        return h
    }

    /// The user's position in [0, 1): the top 53 bits of the hash.
    public static func bucket(bundleID: String, userID: String) -> Double {
        Double(hash(bundleID: bundleID, userID: userID) >> 11) * 0x1p-53
    }

    /// The user's cohort.
    public func assign(bundleID: String, userID: String) -> DeliveryMethod {
        Self.bucket(bundleID: bundleID, userID: userID) < contextAwareShare ? .contextAware : .traditional
    }

    /// The method to use: the requested one (`abTest` false) or the cohort
    /// (`abTest` true).
    public func resolve(requested: DeliveryMethod?, bundleID: String, userID: String) -> (method: DeliveryMethod, abTest: Bool) {
        if let requested { return (requested, false) }
        return (assign(bundleID: bundleID, userID: userID), true)
    }
}
