import HeraldCore
public import HeraldStorage
import Logging
import HeraldPrimitives
import PushProviders

extension Dispatcher {
    /// Sends each of the user's devices its provider's revoke push for a
    /// cancelled handed-off message (a background push, or a data-only
    /// message), then marks the revoke done.
    public func revoke(_ message: StoredMessage) async {
        guard let key = message.idempotencyKey else { return }
        do {
            let devices = try await store.devices(bundleID: message.bundleID, platform: message.platform, userID: message.userID)
            let plan = policy.revoke(windowEnd: message.windowEnd, now: clock.now())
            let deadline = Timestamp(timeIntervalSince1970: Double(plan.deadline) / 1000)
            let clock = clock
            let push = ProviderPush(
                kind: .revoke, message: nil, bundleID: message.bundleID, idempotencyKey: key,
                sendTime: Timestamp(milliseconds: clock.now()), windowEnd: Timestamp(milliseconds: plan.expiresAt),
                deadline: deadline, singleAttempt: false, now: { clock.now() })
            for device in devices {
                guard case .success(let route) = providers.route(bundleID: message.bundleID, device: device) else { continue }
                let result = await send(route.prepare(push, for: [device])[0], to: device, messageID: nil, push: nil)
                try await store.recordOutcome(result.revokeOutcome(
                    messageID: message.id, device: device, at: clock.now(), policy: policy))
            }
            try await store.completeRevoke(messageID: message.id)
        } catch {
            logger.error("revoke failed", metadata: ["message_id": "\(message.id)", "error": "\(error)"])
        }
    }

    /// Sends the revokes still owed (after a restart).
    public func resumeRevokes() async {
        do {
            for owed in try await store.pendingRevokes() {
                if let message = try await store.message(id: owed.messageID) { await revoke(message) }
            }
        } catch {
            logger.error("resuming revokes failed", metadata: ["error": "\(error)"])
        }
    }
}
