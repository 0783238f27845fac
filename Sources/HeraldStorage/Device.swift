public import HeraldCore

/// A registered device. Keyed by (bundleID, deviceToken); a user may have many.
/// Times are milliseconds since the UNIX epoch.
public struct Device: Sendable, Hashable {
    public var bundleID: String
    public var platform: Platform
    public var userID: String
    public var deviceToken: String
    public var locale: String
    /// IANA time zone name.
    public var timezone: String
    /// APNs environment of the token; nil for non-APNs (Android) devices.
    public var environment: APNsEnvironment?
    /// When the token was first registered.
    public var registeredAt: Int64
    /// When it was last registered (re-registration updates this; 410 handling
    /// compares APNs' timestamp against it).
    public var updatedAt: Int64

    public init(
        bundleID: String, platform: Platform, userID: String, deviceToken: String,
        locale: String, timezone: String, environment: APNsEnvironment?,
        registeredAt: Int64, updatedAt: Int64? = nil
    ) {
        self.bundleID = bundleID
        self.platform = platform
        self.userID = userID
        self.deviceToken = deviceToken
        self.locale = locale
        self.timezone = timezone
        self.environment = environment
        self.registeredAt = registeredAt
        self.updatedAt = updatedAt ?? registeredAt
    }
}
