#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HeraldStorage
import PostgresNIO

extension PostgresStoreConfiguration {
    /// The startup parameters every connection sends.
    var startupParameters: [(String, String)] {
        var parameters = [("application_name", "herald")]
        if let schema { parameters.append(("search_path", schema)) }
        return parameters
    }

    /// No parallel workers for the write and lease pools' statements: they
    /// touch a few hundred rows through indexes (claims, ends, the ledger's
    /// reservations), where a Gather's two extra backends cost more than they
    /// save — the ledger's read of 180 users over 1M counted sends took
    /// 10–12 ms with them and 5–7 ms without (bench/RESULTS.md, "Cap
    /// reservations"). The read pool keeps them: CampaignReport's scans gain.
    static let serialPlans = ("max_parallel_workers_per_gather", "0")

    /// One connection (the migrations at start).
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        if let unixSocketPath {
            configuration = .init(unixSocketPath: unixSocketPath, username: username, password: password, database: database)
        } else {
            let tls: PostgresConnection.Configuration.TLS
            switch self.tls {
            case .disable: tls = .disable
            case .require, .verifyCA, .verifyFull: tls = .require(try NIOSSLContext(configuration: try tlsConfiguration()))
            }
            configuration = .init(host: host, port: port, username: username, password: password, database: database, tls: tls)
        }
        configuration.options.additionalStartupParameters = startupParameters
        return configuration
    }

    /// The store's pool `pool`: the main one (`maximumConnections`), the
    /// read side's (`readConnections`, with `statement_timeout`) or the
    /// leases' (`leaseConnections`).
    func clientConfiguration(for pool: PostgresStore.Pool = .main) throws -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        if let unixSocketPath {
            configuration = .init(unixSocketPath: unixSocketPath, username: username, password: password, database: database)
        } else {
            let tls: PostgresClient.Configuration.TLS
            switch self.tls {
            case .disable: tls = .disable
            case .require, .verifyCA, .verifyFull: tls = .require(try tlsConfiguration())
            }
            configuration = .init(host: host, port: port, username: username, password: password, database: database, tls: tls)
        }
        configuration.options.additionalStartupParameters = startupParameters
        switch pool {
        case .main:
            configuration.options.maximumConnections = maximumConnections
            configuration.options.additionalStartupParameters.append(Self.serialPlans)
        case .reads:
            configuration.options.maximumConnections = readConnections
            // Every statement of the read pool, set once per connection (a
            // startup parameter, like `SET statement_timeout`).
            let milliseconds = max(1, readTimeout.components.seconds * 1_000 + readTimeout.components.attoseconds / 1_000_000_000_000_000)
            configuration.options.additionalStartupParameters.append(("statement_timeout", "\(milliseconds)"))
        case .leases:
            configuration.options.maximumConnections = leaseConnections
            configuration.options.additionalStartupParameters.append(Self.serialPlans)
        }
        configuration.options.minimumConnections = 0
        // No keep-alive query on idle connections: postgres-nio 1.33 runs it
        // inside the pool's run(), and one sent as its connection closes (a
        // terminated backend, a restart, or the pool's own shutdown) never
        // completes (vapor/postgres-nio#487), so run() never ends and
        // close() waits out its bound. With a 1 ms keep-alive, 10 of 40 pools
        // whose connections were terminated did not end after cancellation;
        // without one, 0 of 40. An idle connection is closed after 60 s
        // anyway (the pool's idle timeout); one the server closes is dropped
        // when its close arrives, keep-alive or not.
        configuration.options.keepAliveBehavior = nil
        return configuration
    }

    /// `require`: encrypted, certificate not checked (libpq's meaning), or
    /// the chain checked when `sslrootcert` is given (libpq's rule);
    /// `verify-ca`: the chain checked against `sslrootcert` (or the
    /// system's trust store), not the host name; `verify-full`: the chain
    /// and the host name. Throws, naming the file, when `sslrootcert`
    /// cannot be read.
    func tlsConfiguration() throws(PostgresURLError) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        if let file = tlsRootCertificates {
            guard access(file, R_OK) == 0 else {
                throw PostgresURLError("sslrootcert \(file) cannot be read: \(String(cString: strerror(errno)))")
            }
            configuration.trustRoots = .file(file)
        }
        switch tls {
        case .require where tlsRootCertificates == nil: configuration.certificateVerification = .none
        case .require, .verifyCA: configuration.certificateVerification = .noHostnameVerification
        case .verifyFull, .disable: configuration.certificateVerification = .fullVerification
        }
        return configuration
    }
}

/// The driver's errors in words (its own `description` hides everything on
/// purpose) and SQLSTATE codes. Never includes the password: the driver's
/// errors do not hold it.
enum PostgresErrors {
    static func sqlState(_ error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    static func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return String(describing: error) }
        if let info = error.serverInfo {
            let state = info[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
            return "PostgreSQL: \(info[.message] ?? "error")\(state)"
        }
        if error.code == .sslUnsupported {
            return "PostgreSQL connection: the server does not offer TLS, and sslmode requires it (off loopback sslmode "
                + "defaults to verify-full; give the server a certificate, or sslmode=disable on a network you trust)"
        }
        if let underlying = error.underlying {
            return "PostgreSQL connection: \(error.code): \(underlying)"
        }
        return "PostgreSQL connection: \(error.code)"
    }
}
