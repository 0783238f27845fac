import APNs
import HeraldCore
import HeraldStorage
import Logging

extension Dispatcher.DeviceResult {
    /// The per-device record: `delivered` names a success (sent, handed
    /// off, revoked); every failure's kind comes from the result itself.
    func outcome(messageID: String, device: Device, delivered: DeviceOutcomeKind, at: Int64) -> DeviceOutcome {
        let (kind, apnsID, reason, status, attempts): (DeviceOutcomeKind, String?, String?, Int?, Int?) = switch self {
        case .delivered(let id, let attempts): (delivered, id, nil, 200, attempts)
        case .refused(let kind, let why, let status, let attempts): (kind, nil, why, status, attempts)
        case .expired: (.expired, nil, nil, nil, nil)
        case .failed(let why): (.failed, nil, why, nil, nil)
        case .interrupted: (.failed, nil, "interrupted by shutdown", nil, nil)
        case .decided(let kind, let why): (kind, nil, why, nil, nil)
        }
        return DeviceOutcome(
            messageID: messageID, deviceToken: device.deviceToken, kind: kind, apnsID: apnsID, reason: reason, at: at,
            httpStatus: status, attempts: attempts, environment: device.platform == .ios ? device.environment ?? .production : nil)
    }

    /// A revoke push's record, as `policy` words it
    /// (``DeliveryPolicy/revokeRecord(kind:reason:accepted:)``).
    func revokeOutcome(messageID: String, device: Device, at: Int64, policy: DeliveryPolicy = DeliveryPolicy()) -> DeviceOutcome {
        var outcome = outcome(messageID: messageID, device: device, delivered: .revoked, at: at)
        let accepted = if case .delivered = self { true } else { false }
        (outcome.kind, outcome.reason) = policy.revokeRecord(kind: outcome.kind, reason: outcome.reason, accepted: accepted)
        return outcome
    }
}
