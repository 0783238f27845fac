import GRPCEngine
import NIOCore
import NIOPosix
import TLSTransport
#if canImport(Glibc)
import Glibc
#endif

/// Connection failures in words: what failed at which address, and what to try.
enum ConnectFailure {
    static func describe(_ error: any Error, target: ClientTarget) -> ClientFailure {
        if let failure = error as? ClientFailure { return failure }
        let address = target.address
        let elsewhere = "point the client at the server with --addr HOST:PORT or HERALD_ADDRESS"
        if let tls = error as? TLSError {
            switch tls.kind {
            case .certificateVerifyFailed:
                let trusted = target.tls?.caFile.map { "the CAs in --ca-file \($0)" } ?? "the system's CAs (give the server's CA with --ca-file)"
                return ClientFailure(.unavailable, "TLS: the certificate of \(address) is not trusted by \(trusted): \(tls.message)")
            case .alpnNotNegotiated:
                return ClientFailure(.unavailable, "TLS: \(address) did not agree to HTTP/2 (ALPN h2): \(tls.message)")
            default:
                return ClientFailure(.unavailable, "TLS handshake with \(address) failed: \(tls.message) (does the server serve TLS? without --tls the client speaks cleartext h2c)")
            }
        }
        if let connection = error as? NIOConnectionError {
            let refused = connection.connectionErrors.contains { ($0.error as? IOError)?.errnoCode == ECONNREFUSED }
            if refused {
                return ClientFailure(.unavailable, "cannot connect to \(address): connection refused (nothing listens there). Start a server with `herald serve`, or \(elsewhere).")
            }
            if connection.connectionErrors.isEmpty {
                return ClientFailure(.unavailable, "cannot resolve the host '\(target.host)' of the address \(address); check --addr or HERALD_ADDRESS")
            }
            return ClientFailure(.unavailable, "cannot connect to \(address): \(connection.connectionErrors.map { "\($0.error)" }.joined(separator: "; ")); \(elsewhere)")
        }
        if let io = error as? IOError, io.errnoCode == ECONNREFUSED {
            return ClientFailure(.unavailable, "cannot connect to \(address): connection refused (nothing listens there). Start a server with `herald serve`, or \(elsewhere).")
        }
        if error is SocketAddressError || "\(error)".contains("UnknownHost") {
            return ClientFailure(.unavailable, "cannot resolve the host '\(target.host)' of the address \(address); check --addr or HERALD_ADDRESS")
        }
        if case ChannelError.connectTimeout = error {
            return ClientFailure(.unavailable, "cannot connect to \(address): timed out; \(elsewhere)")
        }
        if let status = error as? GRPCStatus {
            let hint = target.tls == nil ? " (if the server serves TLS, add --tls and --ca-file)" : ""
            return ClientFailure(.unavailable, "connecting to \(address) failed: \(status.message)\(hint)")
        }
        return ClientFailure(.unavailable, "cannot connect to \(address): \(error)")
    }
}
