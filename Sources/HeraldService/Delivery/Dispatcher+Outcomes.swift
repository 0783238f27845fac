import PushProviders
import HeraldCore
import HeraldStorage
import Logging

extension Dispatcher.DeviceResult {
    /// The per-device record: `delivered` names a success (sent, handed
    /// off, revoked); every failure's kind comes from the result itself.
    func outcome(messageID: String, device: Device, delivered: DeviceOutcomeKind, at: Int64) -> DeviceOutcome {
        let (kind, providerMessageID, reason, status, attempts): (DeviceOutcomeKind, String?, String?, Int?, Int?) = switch self {
        case .delivered(let id, let attempts): (delivered, id, nil, 200, attempts)
        case .refused(let kind, let why, let status, let attempts, _): (kind, nil, why, status, attempts)
        case .expired: (.expired, nil, nil, nil, nil)
        case .failed(let why): (.failed, nil, why, nil, nil)
        case .interrupted: (.failed, nil, "interrupted by shutdown", nil, nil)
        }
        return DeviceOutcome(
            messageID: messageID, deviceToken: device.deviceToken, kind: kind, providerMessageID: providerMessageID, reason: reason, at: at,
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

extension Device {
    /// The record of this device when the delivery policy finishes it
    /// unsent (``DeviceAction/finish(_:reason:)``).
    func decidedOutcome(messageID: String, kind: DeviceOutcomeKind, reason: String, at: Int64) -> DeviceOutcome {
        DeviceOutcome(
            messageID: messageID, deviceToken: deviceToken, kind: kind, providerMessageID: nil, reason: reason, at: at,
            httpStatus: nil, attempts: nil, environment: platform == .ios ? environment ?? .production : nil)
    }
}

extension DeliveryPush {
    /// The providers' name for this push.
    var providerKind: ProviderPush.Kind { self == .alert ? .alert : .handoff }
}
