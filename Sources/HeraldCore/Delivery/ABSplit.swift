/// The A/B assignment of a user to a delivery method, when the request
/// leaves it unspecified.
///
/// The hash is FNV-1a 64 (offset basis 0xcbf29ce484222325, prime
/// 0x100000001b3) over the UTF-8 bytes of `bundle_id + "\n" + user_id`,
/// followed by MurmurHash3's 64-bit finalizer (fmix64: `k ^= k >> 33;
/// k *= 0xff51afd7ed558ccd; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53;
/// k ^= k >> 33`). It is fixed by this documentation: stable across
/// processes, restarts, replicas and machines (unlike Swift's per-process
/// seeded `Hasher`). The finalizer matters: plain FNV-1a barely moves its high
/// bits for the last byte, so sequential ids (`user-1`, `user-2`, …) would
/// land in the same cohort (54/46 over 10,000 such ids instead of 50/50).
/// The top 53 bits of the result, as a fraction `u` in [0, 1), pick the
/// cohort: `u < contextAwareShare` → context-aware, else traditional.
public struct ABSplit: Sendable, Hashable {
    /// The fraction of users in the context-aware cohort, clamped to [0, 1].
    public var contextAwareShare: Double

    /// The default 50/50 split.
    public static let `default` = ABSplit(contextAwareShare: 0.5)

    /// Creates a split; NaN means the default 0.5.
    public init(contextAwareShare: Double = 0.5) {
        self.contextAwareShare = contextAwareShare.isNaN ? 0.5 : min(max(contextAwareShare, 0), 1)
    }

    /// FNV-1a 64 of `bundleID + "\n" + userID` (before the finalizer).
    public static func fnv1a64(bundleID: String, userID: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        let prime: UInt64 = 0x0000_0100_0000_01b3
        for b in bundleID.utf8 { h = (h ^ UInt64(b)) &* prime }
        h = (h ^ 0x0A) &* prime
        for b in userID.utf8 { h = (h ^ UInt64(b)) &* prime }
        return h
    }

    /// MurmurHash3's fmix64 avalanche finalizer.
    public static func fmix64(_ k: UInt64) -> UInt64 {
        var k = k
        k ^= k >> 33
        k &*= 0xff51_afd7_ed55_8ccd
        k ^= k >> 33
        k &*= 0xc4ce_b9fe_1a85_ec53
        k ^= k >> 33
        return k
    }

    /// The documented split hash: fmix64(FNV-1a 64(bundle_id + "\n" + user_id)).
    public static func hash(bundleID: String, userID: String) -> UInt64 {
        fmix64(fnv1a64(bundleID: bundleID, userID: userID))
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
