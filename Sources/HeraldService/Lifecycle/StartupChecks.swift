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
