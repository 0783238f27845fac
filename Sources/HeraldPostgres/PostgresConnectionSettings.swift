import HeraldStorage
import PostgresNIO

extension PostgresStoreConfiguration {
    /// The startup parameters every connection sends.
    var startupParameters: [(String, String)] {
        var parameters = [("application_name", "herald")]
        if let schema { parameters.append(("search_path", schema)) }
        return parameters
    }

    /// One connection (the migrations at start).
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        if let unixSocketPath {
            configuration = .init(unixSocketPath: unixSocketPath, username: username, password: password, database: database)
        } else {
            let tls: PostgresConnection.Configuration.TLS
            switch self.tls {
            case .disable: tls = .disable
            case .require, .verifyFull: tls = .require(try NIOSSLContext(configuration: tlsConfiguration))
            }
            configuration = .init(host: host, port: port, username: username, password: password, database: database, tls: tls)
        }
        configuration.options.additionalStartupParameters = startupParameters
        return configuration
    }

    /// The pool.
    func clientConfiguration() throws -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        if let unixSocketPath {
            configuration = .init(unixSocketPath: unixSocketPath, username: username, password: password, database: database)
        } else {
            let tls: PostgresClient.Configuration.TLS
            switch self.tls {
            case .disable: tls = .disable
            case .require, .verifyFull: tls = .require(tlsConfiguration)
            }
            configuration = .init(host: host, port: port, username: username, password: password, database: database, tls: tls)
        }
        configuration.options.additionalStartupParameters = startupParameters
        configuration.options.maximumConnections = maximumConnections
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

    /// `require`: encrypted, certificate not checked (libpq's meaning);
    /// `verify-full`: certificate chain and host name checked.
    private var tlsConfiguration: TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if tls == .require { configuration.certificateVerification = .none }
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
        if let underlying = error.underlying {
            return "PostgreSQL connection: \(error.code): \(underlying)"
        }
        return "PostgreSQL connection: \(error.code)"
    }
}
