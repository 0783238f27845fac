/// What happened to one message on one device: the `status` column of the
/// store's outcomes (its raw value, stored as is) and the word logs show.
///
/// A struct with static members rather than an enum (APNSwift's style for
/// wire values): a row written by a newer build with a kind this one does
/// not know still reads back, and a provider added later (FCM) can add kinds
/// without breaking exhaustive switches.
public struct DeviceOutcomeKind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    // Accepted by the provider: the device may have it.

    /// The provider accepted the alert push (traditional, or the
    /// context-aware fallback at window end).
    public static let sent = DeviceOutcomeKind(rawValue: "sent")
    /// The provider accepted the context-aware handoff (a background push
    /// carrying the content and the window end).
    public static let handedOff = DeviceOutcomeKind(rawValue: "handed_off")
    /// Handed to the provider, no answer before a crash (SPEC §4): counted as
    /// reached and never resent, since the provider may have delivered it.
    public static let unconfirmed = DeviceOutcomeKind(rawValue: "unconfirmed")

    // Reported by the app's SDK (ReportEvent).

    /// The app showed the message; stops a handed-off message's fallback.
    public static let displayed = DeviceOutcomeKind(rawValue: "displayed")
    /// The user opened the message; recorded only.
    public static let opened = DeviceOutcomeKind(rawValue: "opened")

    // Refused by the provider.

    /// The token is no longer active for the topic (APNs 410 / Unregistered):
    /// the device is removed if it was registered before APNs' timestamp.
    public static let unregistered = DeviceOutcomeKind(rawValue: "unregistered")
    /// The token is malformed or for the other environment (APNs
    /// BadDeviceToken): the device is removed; retrying cannot help.
    public static let badDeviceToken = DeviceOutcomeKind(rawValue: "bad_device_token")
    /// Any other refusal; the outcome's `reason` holds the provider's reason
    /// (e.g. "BadTopic", "PayloadTooLarge") or "HTTP <status>".
    public static let rejected = DeviceOutcomeKind(rawValue: "rejected")

    // Never accepted, not the provider's verdict.

    /// The TTL (or a handoff's window) ran out while the client was still
    /// retrying: the push was not accepted in time.
    public static let expired = DeviceOutcomeKind(rawValue: "expired")
    /// A local failure (rendering, no route for the bundle, transport);
    /// `reason` says which.
    public static let failed = DeviceOutcomeKind(rawValue: "failed")

    // The bundle's delivery policy (SPEC §4b).

    /// Not attempted yet: held by the delivery policy until the outcome's
    /// `notBefore`; `reason` names the rule (``HoldReason``: local_time,
    /// quiet_hours, frequency_cap, throttle). Not final: the device is sent
    /// the push later (``isFinal`` is false, and a later record for the
    /// device replaces it on the read side).
    public static let waiting = DeviceOutcomeKind(rawValue: "waiting")
    /// Withheld for good by the delivery policy; `reason` names the rule.
    /// Final, never reached: a push whose every device is suppressed ends
    /// the message SUPPRESSED.
    public static let suppressed = DeviceOutcomeKind(rawValue: "suppressed")

    // Revoke pushes (a cancelled handed-off message).

    /// The provider accepted the background revoke push.
    public static let revoked = DeviceOutcomeKind(rawValue: "revoked")
    /// The revoke push was not accepted; `reason` names the underlying
    /// outcome and detail (e.g. "unregistered: Unregistered"). Not retried:
    /// the handed-off content expires at the window end anyway.
    public static let revokeFailed = DeviceOutcomeKind(rawValue: "revoke_failed")

    /// Every kind this build writes (the schema migration maps older rows
    /// onto these).
    public static let allKnown: [DeviceOutcomeKind] = [
        .sent, .handedOff, .unconfirmed, .displayed, .opened, .unregistered, .badDeviceToken, .rejected,
        .expired, .failed, .revoked, .revokeFailed, .waiting, .suppressed,
    ]

    /// The `reason` recorded with ``unconfirmed``.
    public static let unconfirmedReason = "handed to APNs, no answer before the crash"

    /// Whether the device may have the push: the message counts as delivered
    /// (SENT, or HANDED_OFF for a handoff, never FAILED) and the device is
    /// never sent that push again.
    public var reachedDevice: Bool { self == .sent || self == .handedOff || self == .unconfirmed }

    /// Whether the record finishes the device's push: every kind but
    /// ``waiting`` (a held device is sent later).
    public var isFinal: Bool { self != .waiting }

    /// Whether the provider refused the token itself, so the registration
    /// is dropped (when and how: see ``unregistered`` and ``badDeviceToken``).
    public var dropsDevice: Bool { self == .unregistered || self == .badDeviceToken }
}
