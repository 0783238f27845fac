import GRPCEngine
import HeraldCore
import HeraldPrimitives
import HeraldProtos
import HeraldStorage

/// `herald.v1.PushService/Schedule`: validates, resolves the window, the
/// delivery method (A/B split) and the plan, stores the message durably
/// (group commit) and only then answers; the scheduler takes it from there.
struct ScheduleService: Sendable {
    static let path = "/herald.v1.PushService/Schedule"

    let policy: AccessPolicy
    let store: any HeraldStore
    let scheduler: Scheduler
    let clock: any HeraldClock
    let split: ABSplit
    let graceSeconds: Int64
    /// Routes and senders that could deliver; `.unchecked` checks nothing.
    var coverage = DeliveryCoverage.unchecked

    func schedule(_ request: GRPCRequest) async throws -> [UInt8] {
        let caller = try policy.authenticate(request.metadata)
        let input = try ProtobufC.withUnpacked(Herald__V1__ScheduleRequest.self, from: request.message) { wire in
            var decoder = RequestDecoder()
            let input = decoder.scheduleInput(wire)
            try decoder.finish()
            return input
        }
        try policy.authorize(caller, bundleID: input.message.bundleID)
        let now = clock.now()
        let validated = try Validator.validate(
            input, now: Timestamp(milliseconds: now), split: split, graceSeconds: graceSeconds,
            // Time-ordered (UUIDv7), like message ids: inserts append to the
            // key index instead of dirtying a random page per Schedule.
            generateIdempotencyKey: { UUIDv7.make(now: now) })
        let message = validated.message
        guard message.isEnabled(on: message.platform) else {
            let override = message.platform == .ios ? "ios" : "android"
            throw GRPCStatus(.invalidArgument, "\(override).enabled is false: this message would never be delivered")
        }
        if let missing = coverage.missing(bundleID: message.bundleID, platform: message.platform) {
            throw GRPCStatus(.failedPrecondition, missing)
        }
        let stored = StoredMessage(
            id: UUIDv7.make(now: now), bundleID: message.bundleID, platform: message.platform, userID: validated.userID,
            campaignID: validated.campaignID, idempotencyKey: message.idempotencyKey,
            deliveryMethod: validated.method, abTest: validated.abTest,
            windowStart: validated.window.start.milliseconds, windowEnd: validated.window.end.milliseconds,
            dueAt: validated.plan.sendAt.milliseconds,
            // Stored for delivery: without the other platform's override and
            // without unknown fields (a client could park megabytes there).
            request: ProtobufC.cleaned(
                Herald__V1__ScheduleRequest.self, request.message,
                dropping: [message.platform == .ios ? "android" : "ios"]),
            createdAt: now)
        // Past the caller's deadline the write is dropped before it commits:
        // a caller told DEADLINE_EXCEEDED finds nothing stored.
        switch try await store.schedule(stored, deadline: request.deadline) {
        case .alreadyExists(let existing):
            throw GRPCStatus(.alreadyExists,
                "idempotency_key \(ErrorText.quote(message.idempotencyKey)) of \(message.bundleID) belongs to message \(existing.id), "
                + "already \(existing.isSending ? "being sent" : existing.state.rawValue): a key never causes a second delivery")
        case .scheduled(let accepted, let supersededID):
            if let supersededID { await scheduler.unschedule(id: supersededID) }
            await scheduler.schedule(id: accepted.id, dueAt: accepted.dueAt)
            // After the commit (a failed read costs the answer nothing).
            let devices = (try? await store.devices(bundleID: accepted.bundleID, platform: accepted.platform, userID: accepted.userID)) ?? []
            let warnings = coverage.warnings(bundleID: accepted.bundleID, platform: accepted.platform, userID: accepted.userID, devices: devices)
            return Self.response(accepted, key: message.idempotencyKey, sendAt: validated.plan.sendAt, replaced: supersededID != nil,
                                 warnings: warnings)
        }
    }

    static func response(_ message: StoredMessage, key: String, sendAt: Timestamp, replaced: Bool, warnings: [String] = []) -> [UInt8] {
        let arena = CArena()
        var response = Herald__V1__ScheduleResponse.initialized()
        response.message_id = arena.string(message.id)
        response.idempotency_key = arena.string(key)
        response.delivery_method = message.deliveryMethod.wire
        response.ab_test = message.abTest ? 1 : 0
        response.window_start = arena.string(RFC3339.format(Timestamp(milliseconds: message.windowStart)))
        response.window_end = arena.string(RFC3339.format(Timestamp(milliseconds: message.windowEnd)))
        response.send_at = arena.string(RFC3339.format(sendAt))
        response.state = message.state.wire
        response.replaced = replaced ? 1 : 0
        let texts = warnings.map { arena.string($0) }
        response.n_warnings = texts.count
        var pointers: [UnsafeMutablePointer<CChar>?] = texts
        return withExtendedLifetime(arena) {
            pointers.withUnsafeMutableBufferPointer { buffer in
                response.warnings = buffer.baseAddress
                return ProtobufC.pack(&response)
            }
        }
    }
}
