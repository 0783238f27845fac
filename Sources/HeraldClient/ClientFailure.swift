public import GRPCEngine

/// Why a client command failed: the gRPC status it ends with (the server's,
/// or one the client chose for a local failure, e.g. UNAVAILABLE when nothing
/// listens) and a sentence a person understands.
public struct ClientFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The status; its code picks the exit status (``exitCode``).
    public var code: GRPCStatus.Code
    /// What went wrong and, where there is one, what to do about it.
    public var message: String

    /// A failure with `code` (`.ok` for a local one) and its sentence.
    public init(_ code: GRPCStatus.Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// A local problem that is not a gRPC status (a flag's value, an
    /// unreadable file): exit status 1.
    public static func local(_ message: String) -> ClientFailure {
        ClientFailure(.ok, message)
    }

    /// The process exit status for this failure (``ExitStatus``).
    public var exitCode: Int32 { ExitStatus.forFailure(code) }

    public var description: String { message }
}
