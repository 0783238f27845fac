public import HeraldCore

// Design notes (HeraldStore)
//
// - Durability: WAL + synchronous=FULL (default `Durability.sqliteFull`). A
//   Schedule is acknowledged only after its transaction committed and the WAL
//   was fsynced, so it survives kill -9 and power loss. Group commit (one
//   writer thread drains every queued write into one transaction) pays one
//   fsync per batch. Measured alternatives: `.pipelinedSync` (commit with
//   NORMAL, a second thread fdatasyncs the WAL before callers resume; equal
//   here, for slow-fsync disks) and `.processCrash` (NORMAL, no fsync before
//   the ack: kill -9 safe only, ~1.7x the throughput here).
// - Last request wins: the live message of (bundle_id, key) is the row in
//   `message_keys` (its primary key is the uniqueness), so superseded and
//   cancelled rows keep their key for history. A key is *spent* once any push
//   for its message may have reached APNs: a claim was ever made (including
//   one in flight), or the message is HANDED_OFF (the content is on the
//   device, which may display it), SENT or DISPLAYED. A Schedule with a spent
//   key is ALREADY_EXISTS; an unspent SCHEDULED message is SUPERSEDED; an
//   unspent finished one (CANCELLED before any push, EXPIRED, NO_DEVICES)
//   simply hands the key over (`replaced` stays false: nothing was replaced).
// - Crash mid-send (SPEC §4): `claim` sets `sending_since` (and opens the
//   push, `push_started_at`) before anything goes out; the dispatcher records
//   a `handovers` row per device, durably, before that device's request is
//   written to an APNs connection; `transition` ends the push. At start
//   `recoverInterrupted` gives every device handed over without an answer
//   the outcome UNCONFIRMED (never resent: APNs may have delivered it) and
//   puts each interrupted message back to its pre-claim state, so the
//   resumed push goes only to the devices with no outcome for it; a push
//   with any delivered or unconfirmed device ends SENT (or HANDED_OFF).
//   Databases from v1 (no marks) resolve their in-flight messages by the old
//   rule in the v2 migration: FAILED "interrupted" unless a device was sent.
// - Cancel: SCHEDULED → CANCELLED; HANDED_OFF → CANCELLED plus a durable row
//   in `revokes` (the revoke push survives a crash); CANCELLED → cancelled
//   again (idempotent); in flight → not cancelled, reported as SENT; SENT,
//   DISPLAYED, FAILED, … → not cancelled with that state.

/// Durable storage for Herald: messages, per-device outcomes, devices.
///
/// Every write is atomic and durable when its `await` returns. Callers depend
/// on this protocol only, so a shared server-grade database can replace the
/// embedded SQLite store (`SQLiteStore`) without touching them.
/// All times are milliseconds since the UNIX epoch, passed in by the caller.
public protocol HeraldStore: Sendable {
    // MARK: Messages (API)

    /// Stores an accepted Schedule with last-request-wins on
    /// (bundleID, idempotencyKey):
    /// - no message with the key → stored;
    /// - the key's message is SCHEDULED and no push for it was ever claimed →
    ///   it becomes SUPERSEDED and the new one is stored (`replaced`);
    /// - the key's message ended without any push (CANCELLED, EXPIRED,
    ///   NO_DEVICES, FAILED before sending) → the new one takes the key;
    /// - the key is spent (handed off, sent, displayed, or a push was ever
    ///   claimed, including one in flight) → `.alreadyExists`, nothing stored.
    ///
    /// Past `deadline`, or once the calling task is cancelled, before the
    /// write joins a transaction: nothing is stored and `StoreError.abandoned`
    /// is thrown (the caller has given up; storing would only surprise it).
    func schedule(_ message: StoredMessage, deadline: ContinuousClock.Instant?) async throws -> ScheduleOutcome

    /// Cancels the live message of (bundleID, idempotencyKey) when platform,
    /// userID and campaignID also match; otherwise `.notFound`.
    func cancel(
        bundleID: String, platform: Platform, userID: String, campaignID: String,
        idempotencyKey: String, now: Int64
    ) async throws -> CancelOutcome

    func message(id: String) async throws -> StoredMessage?

    /// The live message holding (bundleID, key).
    func message(bundleID: String, idempotencyKey: String) async throws -> StoredMessage?

    // MARK: Scheduler and dispatcher

    /// Up to `limit` messages due at or before `before`, waiting for an action
    /// (SCHEDULED or HANDED_OFF, not in flight), oldest due first.
    func due(before: Int64, limit: Int) async throws -> [StoredMessage]

    /// One page of every message waiting for an action, ordered by
    /// (dueAt, id), after `cursor`. Loads only (id, dueAt, state): rebuilding
    /// the due index for a million messages reads a small covering index.
    func pending(after cursor: PendingCursor?, limit: Int) async throws -> [PendingEntry]

    /// Claims a message for sending (compare-and-set on `from`, and not in
    /// flight): marks it in flight, counts an attempt, spends its key.
    /// Returns the claimed message, or nil when it changed meanwhile
    /// (cancelled, superseded, already claimed). Throws
    /// `StoreError.illegalTransition(from:to: .sent)` for a state no push can
    /// end from (a push may always end SENT), writing nothing.
    func claim(id: String, from: MessageState, now: Int64) async throws -> StoredMessage?

    /// Compare-and-set state change: applies only while the state is `from`;
    /// clears the in-flight marker and ends the push (its hand-over marks
    /// are dropped; the outcomes stay). Returns false when the state changed
    /// meanwhile. `dueAt`, `providerMessageID` and `lastError` are updated when given.
    /// Throws `StoreError.illegalTransition` (writing nothing, outcomes
    /// included) when `MessageState.allowedTransitions` has no `from → to`,
    /// `from == to` too: every state write of the store is checked.
    /// `outcomes` (the devices' results) are recorded in the same
    /// transaction (one write for a whole send), even when the state changed
    /// meanwhile.
    func transition(
        id: String, from: MessageState, to: MessageState, dueAt: Int64?,
        providerMessageID: String?, lastError: String?, now: Int64, recording outcomes: [DeviceOutcome]
    ) async throws -> Bool

    /// Records one device's result for a message.
    func recordOutcome(_ outcome: DeviceOutcome) async throws

    /// Holds devices of a claimed message's push (SPEC §4b), in one write:
    /// records `outcomes` — the WAITING ones (``DeviceOutcomeKind/waiting``,
    /// each with its `reason` and `notBefore`) and any final ones of the
    /// same push (SENT, SUPPRESSED, …) — gives the claim back (the message
    /// stays `from`, SCHEDULED or HANDED_OFF, while any device waits) and
    /// moves its due time to the earliest WAITING `notBefore`. The push
    /// stays open when a device has a final outcome or was handed over, so
    /// those devices are never sent it again; a first claim with none
    /// unspends the key (as `releaseClaim`). The message is marked deferred
    /// (CampaignReport's `deferred`); the WAITING outcomes of one call are
    /// one DEFERRED timeline entry. Returns false when the message is not
    /// claimed in state `from` (the final outcomes are recorded all the
    /// same, as `transition` does; the WAITING ones are not). Throws
    /// `StoreError.invalidRecord`, writing nothing, when `outcomes` has no
    /// WAITING outcome with a `notBefore`, or one for another message.
    func hold(id: String, from: MessageState, now: Int64, recording outcomes: [DeviceOutcome]) async throws -> Bool

    /// Claims a due batch in one write: each of `ids` still waiting
    /// (SCHEDULED, or HANDED_OFF for the fallback) and not in flight is
    /// claimed as by `claim(id:from:now:)`; the others (cancelled,
    /// superseded, displayed, already claimed, unknown) are skipped.
    /// Returns the claimed messages in their pre-claim state, in `ids`'
    /// order. When it throws, nothing was claimed.
    func claim(ids: [String], now: Int64) async throws -> [StoredMessage]

    /// Many `transition` calls, in order; whether each applied. Throws
    /// `StoreError.illegalTransition` when any item's change is not
    /// allowed, writing nothing. SQLite and PostgreSQL write the batch in
    /// one transaction (when they throw, nothing was written); the default
    /// writes the items one by one.
    func transitions(_ items: [Transition]) async throws -> [Bool]

    /// `devices(bundleID:platform:userID:)` for many users in one read, in
    /// `users`' order.
    func devices(of users: [DeviceUser]) async throws -> [[Device]]


    func outcomes(messageID: String) async throws -> [DeviceOutcome]

    /// Records, durably and in one write, that pushes are being handed to
    /// APNs for these devices. Idempotent.
    func recordHandOvers(_ marks: [HandOverMark]) async throws

    /// Device tokens handed over for a message's push.
    func handOvers(messageID: String, push: Int64) async throws -> [String]

    /// Gives a claim back unsent (the route is saturated): the message waits
    /// again in its pre-claim state. A first claim with nothing handed over
    /// unspends the key. Returns false when it was not claimed.
    func releaseClaim(id: String, now: Int64) async throws -> Bool

    /// Resolves messages caught mid-push by a crash: each device handed over
    /// with no answer gets the outcome UNCONFIRMED (never resent); then each
    /// message goes back to its pre-claim state, to resume with the devices
    /// that have no outcome yet. Call once at start, before the due index is
    /// rebuilt.
    func recoverInterrupted(now: Int64) async throws -> InterruptedRecovery

    /// Revoke pushes owed for cancelled handed-off messages.
    func pendingRevokes() async throws -> [PendingRevoke]

    /// Marks a revoke push as done (sent or given up).
    func completeRevoke(messageID: String) async throws

    // MARK: Devices

    /// Upserts by (bundleID, deviceToken). Returns true when newly created.
    /// A re-registration keeps `registeredAt` and sets `updatedAt`.
    func registerDevice(_ device: Device) async throws -> Bool

    /// Returns true when a registration was removed.
    func unregisterDevice(bundleID: String, deviceToken: String) async throws -> Bool

    func devices(bundleID: String, platform: Platform, userID: String) async throws -> [Device]

    /// 410 Unregistered handling: removes the registration only if it was last
    /// registered before `timestamp` (APNs' timestamp, in milliseconds). A
    /// removal appends `device_removed` to the delivery event log, in the
    /// same write (`DeliveryEventLog`).
    func removeDevice(bundleID: String, deviceToken: String, ifRegisteredBefore timestamp: Int64) async throws -> Bool

    // MARK: Operators

    /// Number of messages in each state (states with none are omitted).
    func countsByState() async throws -> [MessageState: Int]

    /// The due time of the oldest waiting message due at or before `now`
    /// (nil when nothing is overdue); lag = now - result.
    func oldestDue(now: Int64) async throws -> Int64?

    func health() async -> StoreHealth
}

extension HeraldStore {
    /// One hand-over mark (`push` is the claimed message's `pushStartedAt`).
    public func recordHandOver(messageID: String, deviceToken: String, push: Int64, at: Int64) async throws {
        try await recordHandOvers([HandOverMark(messageID: messageID, deviceToken: deviceToken, push: push, at: at)])
    }

    /// Walks every pending message in pages of `batchSize`, so a caller can
    /// rebuild its due index without holding full records in memory.
    public func forEachPendingBatch(
        batchSize: Int = 10_000, _ body: ([PendingEntry]) throws -> Void
    ) async throws {
        var cursor: PendingCursor?
        while true {
            let page = try await pending(after: cursor, limit: batchSize)
            if page.isEmpty { return }
            try body(page)
            if page.count < batchSize { return }
            cursor = PendingCursor(after: page[page.count - 1])
        }
    }
}

extension HeraldStore {
    /// `transition(…recording:)` recording no outcomes.
    public func transition(
        id: String, from: MessageState, to: MessageState, dueAt: Int64?,
        providerMessageID: String?, lastError: String?, now: Int64
    ) async throws -> Bool {
        try await transition(id: id, from: from, to: to, dueAt: dueAt, providerMessageID: providerMessageID, lastError: lastError,
                             now: now, recording: [])
    }

    /// `schedule(_:deadline:)` with no deadline.
    public func schedule(_ message: StoredMessage) async throws -> ScheduleOutcome {
        try await schedule(message, deadline: nil)
    }
}

/// A store that answers Schedule's write and device read through callbacks
/// (SQLite: its writer thread; PostgreSQL: its batches; the in-memory test
/// store: its actor): the Schedule RPC's one path, with no Task — it
/// validates on the event loop, and the callbacks answer.
public protocol CallbackScheduling: HeraldStore {
    /// `schedule(_:deadline:)` answered through `completion` instead of an
    /// `await`. `completion` runs once, on whatever thread the write ended
    /// (the store's own), and must not block. The returned closure gives up
    /// the write — like cancelling the awaiting task: if it has not joined a
    /// transaction yet, nothing is stored and `completion` gets
    /// `StoreError.abandoned`.
    func schedule(
        _ message: StoredMessage, deadline: ContinuousClock.Instant?,
        completion: @escaping @Sendable (Result<ScheduleOutcome, any Error>) -> Void
    ) -> @Sendable () -> Void

    /// Hands `body` the devices of `message`'s user (for the answer's
    /// warnings) as a read to run where the answer is built: SQLite's is an
    /// indexed read on a pooled connection, made when called; PostgreSQL's
    /// was made (batched with other calls') before `body` runs, on one of
    /// its threads. A failed read gives no devices.
    func devices(of message: StoredMessage, _ body: @escaping @Sendable (@escaping @Sendable () -> [Device]) -> Void)
}
