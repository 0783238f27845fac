import GRPCEngine
import HeraldPrimitives
import HeraldCore

extension HeraldServer {
    /// What can be known wrong before anything starts (no store opened, no
    /// simulator started): the listeners' addresses can be bound, and the
    /// data directory is a directory if it exists.
    public static func checkBeforeStarting(_ configuration: HeraldConfiguration) throws {
        try checkListenable(host: configuration.host, port: configuration.port)
        if let admin = configuration.admin { try checkListenable(host: admin.host, port: admin.port) }
        try Self.checkDataDirectory(configuration.dataDirectory)
    }

    /// Throws when `path` exists and is not a directory (`mkdir` would say
    /// only "File exists").
    public static func checkDataDirectory(_ path: String) throws(ConfigurationError) {
        var isDirectory = false
        if POSIXFile.exists(path, isDirectory: &isDirectory) && !isDirectory {
            throw ConfigurationError(description: "data directory \(path) exists and is not a directory")
        }
    }
}

extension HeraldConfiguration {
    /// Without access tokens Herald serves on loopback only: the refusal
    /// for any other host, or nil (`herald serve` and `HeraldServer` both
    /// apply it).
    public var openAccessRefusal: String? {
        guard accessPolicy.isOpen && !isLoopbackHost(host) else { return nil }
        return "no access tokens are configured, so Herald serves on loopback only; "
            + "refusing to listen on \(host) (give --tokens-file, or use 127.0.0.1)"
    }
}

extension HeraldConfiguration {
    /// `max-per-second` is carried out by the embedded store's due index
    /// (one process owns it); on a shared store each replica would pace
    /// alone, so the rate would not hold "all replicas together" (SPEC §4b):
    /// refused there until the shared throttle lands (`herald serve`,
    /// `HeraldServer` and SIGHUP all apply it).
    public var throttleRefusal: String? {
        guard case .postgres? = store else { return nil }
        return Self.throttleRefusal(policies: deliveryPolicies.current)
    }

    /// The refusal of `set`'s `max-per-second` on a shared store, or nil.
    static func throttleRefusal(policies set: PolicySet) -> String? {
        let throttled = set.rules.filter { $0.maxPerSecond != nil }.flatMap(\.bundles)
        guard !throttled.isEmpty else { return nil }
        return "max-per-second (bundles \(throttled.joined(separator: ","))) is not supported with a PostgreSQL store yet: "
            + "replicas would each pace alone; remove it, or use the embedded store"
    }
}
