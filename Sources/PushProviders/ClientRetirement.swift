import Synchronization

/// Counts each client's sends in flight, and holds the clients a reload
/// replaced until their last send has returned (then they are shut down).
/// APNs and FCM clients alike.
package final class ClientRetirement<Client: AnyObject & Sendable>: Sendable {
    private struct State {
        var inFlight: [ObjectIdentifier: Int] = [:]
        var waiters: [ObjectIdentifier: [CheckedContinuation<Void, Never>]] = [:]
        /// Replaced clients not yet shut down.
        var retired: [ObjectIdentifier: Client] = [:]
    }

    private let state = Mutex(State())

    package init() {}

    package func begin(_ client: Client) {
        state.withLock { $0.inFlight[ObjectIdentifier(client), default: 0] += 1 }
    }

    package func end(_ client: Client) {
        let id = ObjectIdentifier(client)
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            let left = (state.inFlight[id] ?? 1) - 1
            guard left <= 0 else {
                state.inFlight[id] = left
                return []
            }
            state.inFlight[id] = nil
            return state.waiters.removeValue(forKey: id) ?? []
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Clients someone waits on to go idle (tests).
    package var waitingClients: Int { state.withLock { $0.waiters.count } }

    /// Holds the clients of `old` that `new` no longer uses (each once) until
    /// their sends in flight end, and returns them: a reload's swap.
    package func retire(replaced old: [Client], keeping new: [Client]) -> [Client] {
        let kept = Set(new.map { ObjectIdentifier($0) })
        var seen: Set<ObjectIdentifier> = []
        let replaced = old.filter { !kept.contains(ObjectIdentifier($0)) && seen.insert(ObjectIdentifier($0)).inserted }
        state.withLock { state in
            for client in replaced { state.retired[ObjectIdentifier(client)] = client }
        }
        return replaced
    }

    /// Waits for `client`'s sends in flight, then runs `shutdown` on it,
    /// unless the gateway's shutdown already took it.
    package func retireWhenIdle(_ client: Client, shutdown: (Client) async -> Void) async {
        await idle(client)
        if take(client) { await shutdown(client) }
    }

    /// Returns once `client` has no send in flight (at once when it has
    /// none, or when the task is cancelled).
    package func idle(_ client: Client) async {
        let id = ObjectIdentifier(client)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waiting = self.state.withLock { state -> Bool in
                    guard (state.inFlight[id] ?? 0) > 0, !Task.isCancelled else { return false }
                    state.waiters[id, default: []].append(continuation)
                    return true
                }
                if !waiting { continuation.resume() }
            }
        } onCancel: {
            let waiters = self.state.withLock { $0.waiters.removeValue(forKey: id) ?? [] }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Takes `client` out of the retired set; false when someone else did
    /// (the gateway's shutdown), so it is shut down once.
    package func take(_ client: Client) -> Bool {
        state.withLock { $0.retired.removeValue(forKey: ObjectIdentifier(client)) != nil }
    }

    /// Every retired client not yet shut down (the gateway is stopping).
    package func takeAll() -> [Client] {
        state.withLock { state in
            defer { state.retired.removeAll() }
            return Array(state.retired.values)
        }
    }
}
