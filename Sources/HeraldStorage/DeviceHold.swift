import HeraldCore

/// What `HeraldStore.hold(id:from:now:recording:)` writes, checked before
/// any store touches its database: the WAITING outcomes, the final ones, and
/// the message's next due time (the earliest `notBefore`).
public struct DeviceHold: Sendable, Hashable {
    /// The WAITING outcomes (recorded only when the hold applies).
    public var waiting: [DeviceOutcome]
    /// The final outcomes of the same push (always recorded).
    public var final: [DeviceOutcome]
    /// The message's next due time: the earliest WAITING `notBefore`.
    public var dueAt: Int64

    /// Splits `outcomes` for message `id`; throws `StoreError.invalidRecord`
    /// when one names another message, a WAITING one has no `notBefore`, or
    /// none is WAITING.
    public init(id: String, outcomes: [DeviceOutcome]) throws(StoreError) {
        var waiting: [DeviceOutcome] = [], final: [DeviceOutcome] = []
        var dueAt: Int64?
        for outcome in outcomes {
            guard outcome.messageID == id else {
                throw .invalidRecord("hold of message \(id): an outcome names message \(outcome.messageID)")
            }
            if outcome.kind.isFinal {
                final.append(outcome)
                continue
            }
            guard let notBefore = outcome.notBefore else {
                throw .invalidRecord("hold of message \(id): a WAITING outcome without not_before")
            }
            dueAt = min(dueAt ?? notBefore, notBefore)
            waiting.append(outcome)
        }
        guard let dueAt else { throw .invalidRecord("hold of message \(id): no WAITING outcome") }
        self.waiting = waiting
        self.final = final
        self.dueAt = dueAt
    }
}
