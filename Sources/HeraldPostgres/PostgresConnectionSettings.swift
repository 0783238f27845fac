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
