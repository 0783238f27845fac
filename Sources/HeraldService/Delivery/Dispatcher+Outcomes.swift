import HeraldCore
import HeraldStorage
import Logging
import Synchronization

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

    /// A revoke push's record: `revoked`, or `revoke_failed` with the
    /// failure's own kind in front of its reason (a revoke's failure must not
    /// read as the message's delivery outcome).
    func revokeOutcome(messageID: String, device: Device, at: Int64) -> DeviceOutcome {
        var outcome = outcome(messageID: messageID, device: device, delivered: .revoked, at: at)
        if case .delivered = self { return outcome }
        outcome.reason = outcome.kind.rawValue + (outcome.reason.map { ": \($0)" } ?? "")
        outcome.kind = .revokeFailed
        return outcome
    }
}

extension Dispatcher {
    /// Why a message ended NO_DEVICES (kept as its last_error; GetMessage
    /// shows it): the user had no device for the platform when it was due.
    static func noDevicesReason(_ message: StoredMessage) -> String {
        let platform = message.platform == .ios ? "iOS" : "Android"
        return "no registered \(platform) device for this user in \(message.bundleID) when the push was due"
    }
}
