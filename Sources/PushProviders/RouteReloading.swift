/// A provider's routes as SIGHUP re-reads them (from their files), in two
/// steps so that Herald applies every provider's new routes and its tokens
/// file at once, or, when any is unreadable or invalid, none.
public protocol RouteReloading: Sendable {
    /// Re-reads the routes' sources; nil when there is nothing to swap in.
    /// Throws (a ``RouteReloadError`` or a parse error) when they are
    /// unreadable or invalid: nothing is applied then.
    func prepareReload() throws -> PreparedRouteReload?
}

/// New routes read and checked, not yet in force.
public struct PreparedRouteReload: Sendable {
    /// What applying did: log metadata (routes added, removed, changed,
    /// pools retired) and, per client no route uses any more, a task that
    /// waits for its sends in flight and then shuts it down.
    public struct Applied: Sendable {
        public var metadata: [String: String]
        public var retirements: [@Sendable () async -> Void]

        public init(metadata: [String: String], retirements: [@Sendable () async -> Void]) {
            self.metadata = metadata
            self.retirements = retirements
        }
    }

    /// Swaps the new routes in at once.
    public let apply: @Sendable () -> Applied

    public init(apply: @escaping @Sendable () -> Applied) {
        self.apply = apply
    }

    /// The log metadata of a swap of routes named `old` for `new` (by name,
    /// with their identities): added, removed and changed names, sorted and
    /// `;`-separated (`none`), each key prefixed with `prefix`.
    public static func changes<Identity: Equatable>(
        from old: [(name: String, identity: Identity)], to new: [(name: String, identity: Identity)], prefix: String
    ) -> [String: String] {
        let old = Dictionary(old.map { ($0.name, $0.identity) }, uniquingKeysWith: { first, _ in first })
        let new = Dictionary(new.map { ($0.name, $0.identity) }, uniquingKeysWith: { first, _ in first })
        func names(_ names: [String]) -> String { names.isEmpty ? "none" : names.sorted().joined(separator: ";") }
        return [
            "\(prefix)routes_added": names(new.keys.filter { old[$0] == nil }),
            "\(prefix)routes_removed": names(old.keys.filter { new[$0] == nil }),
            "\(prefix)routes_changed": names(new.filter { old[$0.key] != nil && old[$0.key] != $0.value }.map(\.key)),
        ]
    }
}

/// Why a provider's routes could not be reloaded (the ones in force stay).
public struct RouteReloadError: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}
