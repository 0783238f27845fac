/// The device platform a message or device belongs to.
public enum Platform: String, Sendable, Hashable, CaseIterable, Codable {
    case ios
    case android
}

/// How a message reaches the user.
public enum DeliveryMethod: String, Sendable, Hashable, CaseIterable, Codable {
    /// Handed to the device's SDK at window start as a background push, with an
    /// alert fallback at window end unless the app reported it displayed.
    case contextAware = "context_aware"
    /// An alert push at once, after the cancellation grace period.
    case traditional
}

/// The life cycle of an accepted message. Allowed transitions live in one
/// table (`MessageState.allowedTransitions`).
public enum MessageState: String, Sendable, Hashable, CaseIterable, Codable {
    case scheduled
    case handedOff = "handed_off"
    case sent
    case displayed
    case cancelled
    case superseded
    case failed
    case expired
    case noDevices = "no_devices"
    /// Every device's push was withheld by the bundle's delivery policy
    /// (SPEC §4b): terminal, like ``expired``.
    case suppressed
}

/// Which APNs environment a device token belongs to.
public enum APNsEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    case production
    case sandbox
}
