// APNs header vocabulary shared by the domain core (which renders the
// headers) and the APNs client and simulator (which send and check them).

/// The `apns-priority` header.
///
/// Apple: "10 — send the notification immediately; 5 — send it based on power
/// considerations on the user's device; 1 — prioritize the device's power
/// considerations over all other factors for delivery, and prevent awakening
/// the device." Background pushes (`content-available`) must use 5; Apple
/// throttles or rejects 10 for them.
public struct APNsPriority: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// 10: deliver immediately.
    public static let immediately = APNsPriority(rawValue: 10)
    /// 5: deliver considering the device's power; required for background pushes.
    public static let considerDevicePower = APNsPriority(rawValue: 5)
    /// 1: deliver only when power considerations allow; never wakes the device.
    public static let low = APNsPriority(rawValue: 1)

    public var description: String {
        switch rawValue {
        case 10: "10"
        case 5: "5"
        case 1: "1"
        default: String(rawValue)
        }
    }
}

/// The `apns-push-type` header.
///
/// Apple: required on watchOS 6+ and recommended everywhere; it must match the
/// payload: `alert` for pushes that show an alert, play a sound or badge;
/// `background` for pushes with `content-available: 1` and no alert, sound
/// or badge, which must use `apns-priority` 5.
public struct APNsPushType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A user-visible notification.
    public static let alert = APNsPushType(rawValue: "alert")
    /// A silent push that wakes the app (`content-available: 1`).
    public static let background = APNsPushType(rawValue: "background")
    public static let location = APNsPushType(rawValue: "location")
    public static let voip = APNsPushType(rawValue: "voip")
    public static let complication = APNsPushType(rawValue: "complication")
    public static let fileprovider = APNsPushType(rawValue: "fileprovider")
    public static let mdm = APNsPushType(rawValue: "mdm")
    public static let liveactivity = APNsPushType(rawValue: "liveactivity")
    public static let pushtotalk = APNsPushType(rawValue: "pushtotalk")
    public static let widgets = APNsPushType(rawValue: "widgets")
    /// Every type Apple documents.
    public static let all: Set<APNsPushType> = [
        .alert, .background, .location, .voip, .complication, .fileprovider, .mdm, .liveactivity, .pushtotalk, .widgets,
    ]

    public var description: String { rawValue }
}
