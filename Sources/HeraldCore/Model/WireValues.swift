public import HeraldPrimitives

/// The API's message priority (`herald.v1.Priority`); unspecified → ``normal``.
public enum Priority: String, Sendable, Hashable, CaseIterable, Codable {
    case low
    case normal
    case high

    /// The `apns-priority` for an alert push of this priority.
    public var apnsPriority: APNsPriority {
        switch self {
        case .low: .low
        case .normal: .considerDevicePower
        case .high: .immediately
        }
    }

    /// The FCM `android.priority`; FCM has no low, so LOW maps to NORMAL.
    public var androidPriority: FCMAndroidPriority {
        self == .high ? .high : .normal
    }
}

/// How long APNs/FCM keep trying to deliver: `ttl_seconds`.
///
/// Unset → ``default`` (2,419,200 s = 4 weeks, FCM's maximum and Skygear's
/// default). 0 → deliver now or never (`apns-expiration: 0`, FCM `"0s"`).
/// Larger than ``maximum`` is invalid.
public struct TimeToLive: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// Seconds.
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// 4 weeks, used when the request leaves the TTL unset.
    public static let `default` = TimeToLive(rawValue: 2_419_200)
    /// The largest accepted TTL: 4 weeks (FCM's limit).
    public static let maximum = TimeToLive(rawValue: 2_419_200)
    /// Deliver now or never.
    public static let nowOrNever = TimeToLive(rawValue: 0)

    public var description: String { "\(rawValue)s" }
}

/// The `apns-expiration` header.
///
/// Apple: "a UNIX epoch date expressed in seconds (UTC) … If the value is
/// nonzero, APNs stores the notification and tries to deliver it at least
/// once, repeating the attempt as needed until the specified date. If the
/// value is 0, APNs attempts to deliver the notification only once and
/// doesn't store it."
public struct APNsExpiration: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// UNIX epoch seconds, or 0.
    public var rawValue: Int64
    public init(rawValue: Int64) { self.rawValue = rawValue }

    /// Deliver once, do not store.
    public static let immediately = APNsExpiration(rawValue: 0)

    /// `0` when `ttl` is 0, else `sendTime + ttl` in whole UNIX seconds
    /// (rounded up so sub-second send times never shorten the TTL).
    public static func from(ttl: TimeToLive, sendTime: Timestamp) -> APNsExpiration {
        ttl.rawValue == 0 ? .immediately : APNsExpiration(rawValue: sendTime.ceilingSeconds + Int64(ttl.rawValue))
    }

    /// Decimal, as `String(rawValue)` (digits written into a stack buffer:
    /// cheaper than the generic integer formatting).
    public var description: String {
        guard rawValue >= 0 else { return String(rawValue) }
        var v = UInt64(rawValue)
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buf in
            var i = 20
            repeat {
                i -= 1
                buf[i] = UInt8(truncatingIfNeeded: v % 10) &+ 0x30
                v /= 10
            } while v > 0
            return String(decoding: UnsafeBufferPointer(rebasing: buf[i..<20]), as: UTF8.self)
        }
    }
}

/// FCM HTTP v1 `AndroidConfig.priority`: `NORMAL` or `HIGH` (FCM: "high
/// priority messages … can wake a sleeping device"; LOW maps to NORMAL).
public struct FCMAndroidPriority: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `NORMAL`.
    public static let normal = FCMAndroidPriority(rawValue: "NORMAL")
    /// `HIGH`.
    public static let high = FCMAndroidPriority(rawValue: "HIGH")

    public var description: String { rawValue }
}

/// One HTTP header (name lower-case, as HTTP/2 requires).
public struct HTTPHeader: Sendable, Hashable, CustomStringConvertible {
    /// The header name, lower-case.
    public var name: String
    /// The header value.
    public var value: String
    /// Creates a header.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
    public var description: String { "\(name): \(value)" }
}
