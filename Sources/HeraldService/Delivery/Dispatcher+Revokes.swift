import HeraldCore
public import HeraldStorage
import Logging
import HeraldPrimitives

extension Dispatcher {
    /// Sends the background revoke push (APNs) or data-only revoke message
    /// (FCM) for a cancelled handed-off message to each of the user's
    /// devices, then marks the revoke done.
    public func revoke(_ message: StoredMessage) async {
        guard let key = message.idempotencyKey else { return }
        do {
            let devices = try await store.devices(bundleID: message.bundleID, platform: message.platform, userID: message.userID)
            let plan = policy.revoke(windowEnd: message.windowEnd, now: clock.now())
            let deadline = Timestamp(timeIntervalSince1970: Double(plan.deadline) / 1000)
            for device in devices {
                let result: DeviceResult
                switch providerRoute(bundleID: message.bundleID, device: device) {
                case .failure: continue
                case .success(.apns(let client)):
                    let rendering = APNsRenderer.renderRevoke(
                        bundleID: message.bundleID, idempotencyKey: key, deviceToken: device.deviceToken,
                        apnsID: UUIDv4.make(), expiresAt: Timestamp(milliseconds: plan.expiresAt))
                    result = await send(rendering, to: device, with: client, deadline: deadline)
                case .success(.fcm(let sender, let projectID)):
                    // Data only, one attempt (the policy's): the handed-off content expires at the window end anyway.
                    let rendering = FCMRenderer.renderRevoke(
                        idempotencyKey: key, deviceToken: device.deviceToken, sendTime: Timestamp(milliseconds: clock.now()),
                        expiresAt: Timestamp(milliseconds: plan.expiresAt))
                    result = await sendFCM(rendering.body, to: device, with: sender, projectID: projectID, deadline: deadline,
                                           singleAttempt: plan.fcmSingleAttempt)
                }
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
