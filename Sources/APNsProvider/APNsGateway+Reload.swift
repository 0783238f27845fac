public import APNs
import PushProviders

extension APNsGateway {
    /// Swaps in `routes` at once; returns the clients no new route uses.
    /// Sends already in flight finish on them: `retireWhenIdle` shuts each
    /// down after its last one.
    public func replaceRoutes(_ routes: [Route]) -> [APNsClient] {
        let old = current.withLock { current in
            defer { current = routes }
            return current
        }
        let kept = Set(routes.map { ObjectIdentifier($0.client) })
        var seen: Set<ObjectIdentifier> = []
        let replaced = old.map(\.client).filter { !kept.contains(ObjectIdentifier($0)) && seen.insert(ObjectIdentifier($0)).inserted }
        retirement.retire(replaced)
        return replaced
    }

    /// Waits for `client`'s sends in flight, then shuts it down (unless the
    /// gateway's shutdown already has).
    public func retireWhenIdle(_ client: APNsClient) async {
        await retirement.idle(client)
        if retirement.take(client) { await client.shutdown() }
    }
}
