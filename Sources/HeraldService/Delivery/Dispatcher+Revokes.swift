import HeraldCore
public import HeraldStorage
import Logging
import HeraldPrimitives

extension Dispatcher {
    /// Sends the background revoke push for a cancelled handed-off message
    /// to each of the user's devices, then marks the revoke done.
    public func revoke(_ message: StoredMessage) async {
        guard let key = message.idempotencyKey else { return }
        do {
            let devices = try await store.devices(bundleID: message.bundleID, platform: message.platform, userID: message.userID)
            let deadline = Timestamp(timeIntervalSince1970: Double(max(message.windowEnd, clock.now() + 10_000)) / 1000)
            for device in devices {
                guard let client = gateway.sender(bundleID: message.bundleID, environment: device.environment) else { continue }
                let rendering = APNsRenderer.renderRevoke(
                    bundleID: message.bundleID, idempotencyKey: key, deviceToken: device.deviceToken,
                    apnsID: UUIDv4.make(), expiresAt: Timestamp(milliseconds: message.windowEnd))
                let result = await send(rendering, to: device, with: client, deadline: deadline)
                try await store.recordOutcome(result.revokeOutcome(
                    messageID: message.id, device: device, at: clock.now()))
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
