public import HeraldCore

/// One device's result of a send, in no provider's words.
public enum ProviderResult: Sendable, Equatable {
    /// The provider accepted it; `providerMessageID` is its id for the
    /// message (the apns-id, the FCM message name).
    case delivered(providerMessageID: String, attempts: Int)
    /// The provider refused it, with the neutral outcome kind, the
    /// provider's reason and HTTP status, and whether the device's
    /// registration is dropped.
    case refused(DeviceOutcomeKind, reason: String, status: Int, attempts: Int, drop: DeviceDrop = .keep)
    /// The deadline (TTL) ran out before the provider answered.
    case expired
    case failed(String)
    /// Herald is shutting down (the client was shut down mid-send, or the
    /// send was cancelled): no outcome; the push resumes at the next start,
    /// like after a crash.
    case interrupted
}

/// Whether a refusal drops the device's registration.
public enum DeviceDrop: Sendable, Equatable {
    /// The registration stays.
    case keep
    /// Removed, but only when it was last registered before this time (ms
    /// since the epoch): a re-registration since the provider's verdict is
    /// a new token life.
    case ifRegisteredBefore(Int64)
}
