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
    /// Schedule has one path: the store's callback (`CallbackScheduling`).
    let store: any CallbackScheduling
    let scheduler: Scheduler
    let clock: any HeraldClock
    let split: ABSplit
    let graceSeconds: Int64
    /// Routes and senders that could deliver; `.unchecked` checks nothing.
    var coverage = DeliveryCoverage.unchecked
    /// `send_at` under the bundle's delivery policy.
    var planner = SendAtPlanner()

    /// Requests up to this size are decoded and validated on the event loop
    /// (a typical Schedule is well under 1 KiB); larger ones on the compute
    /// threads, so a big request never delays the loop's other calls.
    static let inlineBytes = 16 * 1024

    /// The other platform's override, dropped from what is stored (field
    /// numbers looked up once, not per call).
    static let androidField = ProtobufC.fieldNumbers(Herald__V1__ScheduleRequest.self, ["android"])
    static let iosField = ProtobufC.fieldNumbers(Herald__V1__ScheduleRequest.self, ["ios"])

    /// The RPC without a Task, on every store (SQLite, PostgreSQL and the
    /// in-memory test store alike): decode and validate here, store through
    /// the store's callback, answer on the call's loop once it committed
    /// (and, on PostgreSQL, the devices for the warnings were read). Past the
    /// caller's deadline, or once the call is cancelled, the write is given
    /// up before it commits: a caller told DEADLINE_EXCEEDED finds nothing
    /// stored.
    func schedule(_ request: GRPCRequest, reply: DomainReply) throws {
        let accepted = try prepare(request)
        let store = self.store
        let giveUp = store.schedule(accepted.stored, deadline: request.deadline) { [self] outcome in
            switch outcome {
            case .success(let outcome):
                guard case .scheduled(let message, _) = outcome else {
                    reply.answerOnLoop { try answer(outcome, accepted) { [] } }
                    return
                }
                store.devices(of: message) { devices in
                    reply.answerOnLoop { try answer(outcome, accepted, devices: devices) }
                }
            case .failure(let error):
                reply.fail(error)
            }
        }
        reply.onCancel(giveUp)
    }

    /// What a valid request becomes before it is stored.
    struct Accepted: Sendable {
        let stored: StoredMessage
        let key: String?
        let sendAt: Timestamp
        /// What `send_at` is planned from (the stored request's policy fields).
        var message: PushMessage? = nil
        var alert = true
    }

    /// Authenticates, decodes, validates and resolves the message (window,
    /// method, plan); throws the caller's error. Stores nothing.
    func prepare(_ request: GRPCRequest) throws -> Accepted {
        let caller = try policy.authenticate(request.metadata)
        // protobuf-c unpacks into the thread's arena: no malloc per field.
        let input = try ProtobufC.withArena { arena in
            try ProtobufC.withUnpacked(Herald__V1__ScheduleRequest.self, from: request.message, arena: arena) { wire in
                var decoder = RequestDecoder()
                let input = decoder.scheduleInput(wire)
                try decoder.finish()
                return input
            }
        }
        try policy.authorize(caller, bundleID: input.message.bundleID)
        let now = clock.now()
        var random = ThreadRandom()
        let validated = try Validator.validate(
            input, now: Timestamp(milliseconds: now), split: split, graceSeconds: graceSeconds,
            // Time-ordered (UUIDv7), like message ids: inserts append to the
            // key index instead of dirtying a random page per Schedule.
            generateIdempotencyKey: { UUIDv7.make(now: now, using: &random) })
        let message = validated.message
        guard message.isEnabled(on: message.platform) else {
            let override = message.platform == .ios ? "ios" : "android"
            throw GRPCStatus(.invalidArgument, "\(override).enabled is false: this message would never be delivered")
        }
        if let missing = coverage.missing(bundleID: message.bundleID, platform: message.platform) {
            throw GRPCStatus(.failedPrecondition, missing)
        }
        let stored = StoredMessage(
            id: UUIDv7.make(now: now, using: &random), bundleID: message.bundleID, platform: message.platform, userID: validated.userID,
            campaignID: validated.campaignID, idempotencyKey: message.idempotencyKey,
            deliveryMethod: validated.method, abTest: validated.abTest,
            windowStart: validated.window.start.milliseconds, windowEnd: validated.window.end.milliseconds,
            dueAt: validated.plan.sendAt.milliseconds,
            // Stored for delivery: without the other platform's override and
            // without unknown fields (a client could park megabytes there).
            request: ProtobufC.cleaned(
                Herald__V1__ScheduleRequest.self, request.message,
                droppingNumbers: message.platform == .ios ? Self.androidField : Self.iosField),
            createdAt: now, transactional: message.transactional)
        return Accepted(stored: stored, key: message.idempotencyKey, sendAt: validated.plan.sendAt, message: message,
                        alert: validated.plan.firstPush == .alert)
    }

    /// After the commit: hands the message to the scheduler (no `await`: it
    /// is queued for the scheduler's loop) and packs the answer, with the
    /// warnings from the user's `devices` (read only for a scheduled
    /// message; a failed read gives none and costs the answer nothing).
    func answer(_ outcome: ScheduleOutcome, _ accepted: Accepted, devices: () -> [Device]) throws -> [UInt8] {
        switch outcome {
        case .alreadyExists(let existing):
            let key = accepted.key ?? ""
            throw GRPCStatus(.alreadyExists,
                "idempotency_key \(ErrorText.quote(key)) of \(existing.bundleID) belongs to message \(existing.id), "
                + "already \(existing.isSending ? "being sent" : existing.state.rawValue): a key never causes a second delivery")
        case .scheduled(let message, let supersededID):
            scheduler.enqueue(id: message.id, dueAt: message.dueAt, slot: message.dueSlot, superseding: supersededID)
            let devices = devices()
            let warnings = coverage.warnings(bundleID: message.bundleID, platform: message.platform, userID: message.userID,
                                             devices: devices)
            var sendAt = accepted.sendAt
            if let pushMessage = accepted.message {
                sendAt = Timestamp(milliseconds: planner.sendAt(
                    message, message: pushMessage, planned: accepted.sendAt.milliseconds, alert: accepted.alert, devices: devices,
                    graceSeconds: graceSeconds))
            }
            return Self.response(message, key: accepted.key ?? "", sendAt: sendAt, replaced: supersededID != nil,
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
