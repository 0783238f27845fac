/// Injected faults waiting for their requests: `messages:send` faults in
/// injection order (each used `count` times), and `invalid_grant` answers
/// for the token endpoint.
struct FaultQueue {
    private var send: [(fault: FCMFault, remaining: Int)] = []
    private var invalidGrants = 0

    mutating func inject(_ fault: FCMFault, count: Int) {
        guard count > 0 else { return }
        if fault == .invalidGrant {
            invalidGrants += count
        } else {
            send.append((fault, count))
        }
    }

    /// The fault for the next `messages:send`, if any (used up one by one).
    mutating func nextSendFault() -> FCMFault? {
        guard !send.isEmpty else { return nil }
        let fault = send[0].fault
        send[0].remaining -= 1
        if send[0].remaining == 0 { send.removeFirst() }
        return fault
    }

    /// Whether the next token request gets `invalid_grant`.
    mutating func nextGrantFails() -> Bool {
        guard invalidGrants > 0 else { return false }
        invalidGrants -= 1
        return true
    }

    /// Faults not yet used: send faults (by uses left) and invalid grants.
    var pending: Int { send.reduce(invalidGrants) { $0 + $1.remaining } }

    mutating func clear() { self = FaultQueue() }
}
