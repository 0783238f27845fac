/// Why a device's push is withheld for good (SPEC §4b; the `reason` of a
/// SUPPRESSED device).
public enum SuppressReason: String, Sendable, Hashable, CaseIterable {
    /// `local_send_time` names no instant inside the window for its zone.
    case localSendTime = "local_time"
    /// Quiet hours end at or past the window end or the TTL.
    case quietHours = "quiet_hours"
    /// The caps allow no instant inside the window (and the TTL) outside
    /// quiet hours.
    case frequencyCap = "frequency_cap"
}
