import APNs
import HeraldCore
import HeraldStorage
import Logging
import Synchronization
import TLSTransport

extension Dispatcher.DeviceResult {
    /// The per-device record: `delivered` names a success (sent, handed
    /// off, revoked); every failure's kind comes from the result itself.
    func outcome(messageID: String, deviceToken: String, delivered: DeviceOutcomeKind, at: Int64) -> DeviceOutcome {
        let (kind, apnsID, reason): (DeviceOutcomeKind, String?, String?) = switch self {
        case .delivered(let id): (delivered, id, nil)
        case .refused(let kind, let why): (kind, nil, why)
        case .expired: (.expired, nil, nil)
        case .failed(let why): (.failed, nil, why)
        case .interrupted: (.failed, nil, "interrupted by shutdown")
        }
        return DeviceOutcome(messageID: messageID, deviceToken: deviceToken, kind: kind, apnsID: apnsID, reason: reason, at: at)
    }

    /// A revoke push's record: `revoked`, or `revoke_failed` with the
    /// failure's own kind in front of its reason (a revoke's failure must not
    /// read as the message's delivery outcome).
    func revokeOutcome(messageID: String, deviceToken: String, at: Int64) -> DeviceOutcome {
        var outcome = outcome(messageID: messageID, deviceToken: deviceToken, delivered: .revoked, at: at)
        if case .delivered = self { return outcome }
        outcome.reason = outcome.kind.rawValue + (outcome.reason.map { ": \($0)" } ?? "")
        outcome.kind = .revokeFailed
        return outcome
    }
}
