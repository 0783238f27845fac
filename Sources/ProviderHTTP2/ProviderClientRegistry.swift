import Synchronization

/// A provider client a ``ProviderClientRegistry`` keeps: it reports a status and shuts down.
package protocol RegisteredProviderClient: Sendable {
    associatedtype Status: Sendable
    func status() async -> Status
    func shutdown() async
}

/// One client per key (credentials and endpoint), made on first use, so one
/// Herald instance serves many apps, teams and projects without credentials
/// of different owners sharing a connection.
package final class ProviderClientRegistry<Key: Hashable & Sendable & CustomStringConvertible, Client: RegisteredProviderClient>: Sendable {
    private let clients = Mutex<[Key: Client]>([:])

    package init() {}

    /// The client for `key`, created with `make()` the first time.
    package func client(for key: Key, make: () throws -> Client) throws -> Client {
        try clients.withLock { clients in
            if let existing = clients[key] { return existing }
            let client = try make()
            clients[key] = client
            return client
        }
    }

    /// Status of every client, in key order, for operators.
    package func statuses() async -> [(key: Key, status: Client.Status)] {
        let all = clients.withLock { Array($0) }
        var result: [(key: Key, status: Client.Status)] = []
        for (key, client) in all.sorted(by: { $0.key.description < $1.key.description }) {
            result.append((key, await client.status()))
        }
        return result
    }

    /// Shuts every client down and forgets them.
    package func shutdown() async {
        let all = clients.withLock { clients in
            defer { clients.removeAll() }
            return Array(clients.values)
        }
        for client in all { await client.shutdown() }
    }
}
