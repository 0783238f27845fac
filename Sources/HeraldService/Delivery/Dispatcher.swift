import APNs
import CInterop
import HeraldCore
import HeraldProtos
import HeraldStore
import Logging
import TLSTransport

/// Carries out a due message's next action: the alert push (traditional, or
/// the context-aware fallback at window end) or the context-aware handoff
/// (a background push at window start); and revoke pushes for cancelled
/// handed-off messages.
///
/// Every push is claimed in the store first (so a crash mid-send is visible
/// at restart and the message is never sent twice), rendered per device in
/// the device's locale, sent through the APNs client, and its outcome
/// recorded per device before the message's state changes.
public final class Dispatcher: Sendable {
    enum Push: String, Sendable {
        case alert
        case handoff
    }

    /// One device's result.
    enum DeviceResult: Sendable {
        case delivered(apnsID: String)
        case rejected(reason: String)
        case expired
        case failed(String)
    }

    let store: any HeraldStore
    let gateway: APNsGateway
    let clock: any HeraldClock
    let scheduler: Scheduler
    let logger: Logger

    public init(store: any HeraldStore, gateway: APNsGateway, clock: any HeraldClock, scheduler: Scheduler, logger: Logger) {
        self.store = store
        self.gateway = gateway
        self.clock = clock
        self.scheduler = scheduler
        self.logger = logger
    }

    /// Runs the next action of message `id`, if it still has one.
    ///
    /// The claim is the read: it returns the message only if it was still
    /// waiting (SCHEDULED, or HANDED_OFF for the fallback) and marks it in
    /// flight, so a cancelled, superseded or displayed message is skipped.
    public func dispatch(_ id: String) async {
        do {
            let now = clock.now()
            if let claimed = try await store.claim(id: id, from: .scheduled, now: now) {
                // The planner degrades context-aware to a plain alert when the
                // handoff could not go out before the window ends
                // (DeliveryPlanner.plan).
                let handoff = claimed.deliveryMethod == .contextAware && claimed.dueAt < claimed.windowEnd
                try await deliver(claimed, from: .scheduled, push: handoff ? .handoff : .alert)
            } else if let claimed = try await store.claim(id: id, from: .handedOff, now: now) {
                try await deliver(claimed, from: .handedOff, push: .alert)  // no DISPLAYED by window end
            }
        } catch {
            logger.error("dispatch failed", metadata: ["message_id": "\(id)", "error": "\(error)"])
        }
    }

    private func deliver(_ claimed: StoredMessage, from: MessageState, push: Push) async throws {
        let now = clock.now()
        let pushMessage: PushMessage
        do {
            pushMessage = try Self.pushMessage(from: claimed)
        } catch {
            try await finish(claimed, from: from, to: .failed, error: "stored request does not render: \(error)")
            return
        }
        guard claimed.platform == .ios else {
            try await finish(claimed, from: from, to: .failed,
                             error: "FCM sending is not configured: Herald delivers through APNs; Render shows the FCM message")
            return
        }
        let ttlMilliseconds = Int64(pushMessage.ttl.rawValue) * 1000
        // "0 = now or never": a minute of slack for the scheduler itself.
        if now - claimed.dueAt > max(ttlMilliseconds, 60_000) {
            try await finish(claimed, from: from, to: .expired, error: "TTL ran out before the push could be sent")
            return
        }
        let devices = try await store.devices(bundleID: claimed.bundleID, platform: claimed.platform, userID: claimed.userID)
        guard !devices.isEmpty else {
            try await finish(claimed, from: from, to: .noDevices, error: nil)
            return
        }
        // APNs gets until the TTL runs out (ttl 0: one short attempt).
        let deadline = EpochTime(timeIntervalSince1970: Double(now + max(ttlMilliseconds, 10_000)) / 1000)
        let results = await withTaskGroup(of: (Device, DeviceResult).self) { group in
            for device in devices {
                group.addTask {
                    (device, await self.send(pushMessage, of: claimed, push: push, to: device, deadline: deadline))
                }
            }
            var results: [(Device, DeviceResult)] = []
            for await result in group { results.append(result) }
            return results
        }
        let outcomes = results.map { device, result in
            result.outcome(messageID: claimed.id, deviceToken: device.deviceToken,
                           delivered: push == .alert ? "sent" : "handed_off", at: clock.now())
        }
        let delivered = results.compactMap { if case .delivered(let id) = $0.1 { id } else { nil } }
        if let apnsID = delivered.first {
            switch push {
            case .alert:
                try await finish(claimed, from: from, to: .sent, apnsID: apnsID, error: nil, recording: outcomes)
            case .handoff:
                try await finish(claimed, from: from, to: .handedOff, dueAt: claimed.windowEnd, apnsID: apnsID, error: nil,
                                 recording: outcomes)
                // The app may have reported it displayed while this was recorded.
                let shown = try await store.outcomes(messageID: claimed.id).contains { $0.status == "displayed" }
                if shown {
                    try await finish(claimed, from: .handedOff, to: .displayed, error: nil)
                } else {
                    await scheduler.schedule(id: claimed.id, dueAt: claimed.windowEnd)
                }
            }
            logger.info("delivered", metadata: [
                "message_id": "\(claimed.id)", "push": "\(push.rawValue)", "devices": "\(delivered.count)/\(devices.count)",
                "apns_id": "\(apnsID)",
            ])
        } else if results.allSatisfy({ if case .expired = $0.1 { true } else { false } }) {
            try await finish(claimed, from: from, to: .expired, error: "TTL ran out before APNs accepted the push",
                             recording: outcomes)
        } else {
            let reasons = results.map { "\($0.0.deviceToken.prefix(8))…: \(Self.describe($0.1))" }.joined(separator: "; ")
            try await finish(claimed, from: from, to: .failed, error: reasons, recording: outcomes)
        }
    }

    private func send(_ message: PushMessage, of stored: StoredMessage, push: Push, to device: Device, deadline: EpochTime) async -> DeviceResult {
        guard let client = gateway.client(bundleID: stored.bundleID, environment: device.environment) else {
            return .failed("no APNs route for \(stored.bundleID) (\(device.environment?.rawValue ?? "production"))")
        }
        let now = Timestamp(milliseconds: clock.now())
        let rendering: APNsRendering
        do {
            switch push {
            case .alert:
                rendering = try APNsRenderer.render(
                    message, locale: device.locale, deviceToken: device.deviceToken, apnsID: UUIDv4.make(), sendTime: now)
            case .handoff:
                rendering = try APNsRenderer.renderHandoff(
                    message, locale: device.locale, deviceToken: device.deviceToken, apnsID: UUIDv4.make(),
                    sendTime: now, windowEnd: Timestamp(milliseconds: stored.windowEnd))
            }
        } catch {
            return .failed("render: \(error)")
        }
        return await send(rendering, to: device, with: client, deadline: deadline)
    }

    private func send(_ rendering: APNsRendering, to device: Device, with client: APNsClient, deadline: EpochTime) async -> DeviceResult {
        let request = APNsRequest(
            deviceToken: device.deviceToken, headers: rendering.headers.map { ($0.name, $0.value) },
            payload: rendering.payload, deadline: deadline)
        do {
            let response = try await client.send(request)
            if response.isSuccess { return .delivered(apnsID: response.apnsID ?? rendering.header("apns-id") ?? "") }
            let reason = response.reason?.rawValue ?? "HTTP \(response.status)"
            if response.reason == .unregistered || response.status == 410 {
                let registeredBefore = response.timestampMilliseconds ?? clock.now()
                _ = try? await store.removeDevice(bundleID: device.bundleID, deviceToken: device.deviceToken, ifRegisteredBefore: registeredBefore)
            } else if response.reason == .badDeviceToken {
                _ = try? await store.removeDevice(bundleID: device.bundleID, deviceToken: device.deviceToken, ifRegisteredBefore: .max)
            }
            return .rejected(reason: reason)
        } catch APNsError.deadlineExceeded {
            return .expired
        } catch {
            return .failed("\(error)")
        }
    }

    /// Moves the message on and records the devices' results, in one write.
    private func finish(
        _ message: StoredMessage, from: MessageState, to: MessageState,
        dueAt: Int64? = nil, apnsID: String? = nil, error: String?, recording outcomes: [DeviceOutcome] = []
    ) async throws {
        let applied = try await store.transition(
            id: message.id, from: from, to: to, dueAt: dueAt, apnsID: apnsID, lastError: error, now: clock.now(),
            recording: outcomes)
        if !applied {
            logger.warning("state changed during send", metadata: ["message_id": "\(message.id)", "wanted": "\(to.rawValue)"])
        } else if ![.sent, .handedOff, .displayed].contains(to) {
            logger.info("message ended", metadata: [
                "message_id": "\(message.id)", "state": "\(to.rawValue)", "reason": "\(error ?? "")",
            ])
        }
    }

    /// Sends the background revoke push for a cancelled handed-off message
    /// to each of the user's devices, then marks the revoke done.
    public func revoke(_ message: StoredMessage) async {
        guard let key = message.idempotencyKey else { return }
        do {
            let devices = try await store.devices(bundleID: message.bundleID, platform: message.platform, userID: message.userID)
            let deadline = EpochTime(timeIntervalSince1970: Double(max(message.windowEnd, clock.now() + 10_000)) / 1000)
            for device in devices {
                guard let client = gateway.client(bundleID: message.bundleID, environment: device.environment) else { continue }
                let rendering = APNsRenderer.renderRevoke(
                    bundleID: message.bundleID, idempotencyKey: key, deviceToken: device.deviceToken,
                    apnsID: UUIDv4.make(), expiresAt: Timestamp(milliseconds: message.windowEnd))
                let result = await send(rendering, to: device, with: client, deadline: deadline)
                try await store.recordOutcome(result.outcome(
                    messageID: message.id, deviceToken: device.deviceToken, delivered: "revoked", otherwisePrefix: "revoke_",
                    at: clock.now()))
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

    /// The stored Schedule request, as the core's validated message.
    static func pushMessage(from stored: StoredMessage) throws -> PushMessage {
        let input = try ProtobufC.withUnpacked(Herald__V1__ScheduleRequest.self, from: stored.request) { wire in
            var decoder = RequestDecoder()
            let input = decoder.scheduleInput(wire).message
            try decoder.finish()
            return input
        }
        return try Validator.validate(RenderInput(message: input), generateIdempotencyKey: { stored.idempotencyKey ?? "" })
    }

    private static func describe(_ result: DeviceResult) -> String {
        switch result {
        case .delivered: "delivered"
        case .rejected(let reason): reason
        case .expired: "expired"
        case .failed(let why): why
        }
    }
}

extension Dispatcher.DeviceResult {
    /// The per-device record: `delivered` names a success; failures are
    /// `unregistered`, `rejected`, `expired` or `failed`, after
    /// `otherwisePrefix` (e.g. `revoke_failed`).
    func outcome(messageID: String, deviceToken: String, delivered: String, otherwisePrefix: String = "", at: Int64) -> DeviceOutcome {
        let (status, apnsID, reason): (String, String?, String?) = switch self {
        case .delivered(let id): (delivered, id, nil)
        case .rejected(let why): (otherwisePrefix + (why == "Unregistered" ? "unregistered" : "rejected"), nil, why)
        case .expired: (otherwisePrefix + "expired", nil, nil)
        case .failed(let why): (otherwisePrefix + "failed", nil, why)
        }
        return DeviceOutcome(messageID: messageID, deviceToken: deviceToken, status: status, apnsID: apnsID, reason: reason, at: at)
    }
}
