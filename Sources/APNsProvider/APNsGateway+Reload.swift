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
        return retirement.retire(replaced: old.map(\.client), keeping: routes.map(\.client))
    }

    /// Waits for `client`'s sends in flight, then shuts it down (unless the
    /// gateway's shutdown already has).
    public func retireWhenIdle(_ client: APNsClient) async {
        await retirement.retireWhenIdle(client) { await $0.shutdown() }
    }
}
