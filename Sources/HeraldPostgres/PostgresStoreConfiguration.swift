import HeraldPrimitives

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a `PostgresStore` connects, parsed strictly from a libpq-style URL:
///
///     postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=…&sslrootcert=FILE&passfile=FILE&host=/socket/dir]
///
/// (`postgresql://` too). `sslmode` (docs/SECURITY.md "PostgreSQL
/// connection security"):
/// - `verify-full`: TLS; the server's certificate chain is checked against
///   `sslrootcert` (a PEM file of CA certificates) or the system's trust
///   store, and its name against the host. The default for a host that is
///   not loopback.
/// - `verify-ca`: TLS; the chain is checked, the host name is not.
/// - `require`: TLS without any check of the certificate (libpq's meaning:
///   encrypted, but anyone on the path can stand in for the server). With
///   `sslrootcert` it checks the chain, like `verify-ca` (libpq's rule).
/// - `disable`: no TLS. The default for a loopback host (`localhost`,
///   127.0.0.0/8, ::1) and for a unix socket.
///
/// The password comes from the URL, else from `passfile=FILE`, else from
/// the file `PGPASSFILE` names (libpq's format, 0600 or stricter: see
/// `PostgresPassfile`). A `host=` parameter starting with `/` names the
/// directory of the server's unix socket (`DIR/.s.PGSQL.PORT`), as libpq
/// reads it; the URL's host is then ignored. User, password and database
/// may be percent-encoded.
///
/// `description` (and `redactedURL`) never show the password.
public struct PostgresStoreConfiguration: Sendable, Hashable, CustomStringConvertible {
    public enum TLSMode: String, Sendable, Hashable, CaseIterable {
        case disable
        case require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    public var host: String
    public var port: Int
    /// The server's unix socket file, when connecting through one.
    public var unixSocketPath: String?
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode
    /// `sslrootcert`: a PEM file of the CA certificates the server's chain
    /// must lead to (nil: the system's trust store).
    public var tlsRootCertificates: String?
    /// `passfile`: where the password came from, when it did (shown in
    /// `redactedURL`; the password never is).
    public var passfile: String?
    /// The schema the tables live in (`search_path`); nil: the server's
    /// default (`public`). Tests give each case a fresh one.
    public var schema: String?
    /// Most connections the pool opens (each replica) for Schedule,
    /// claims, ends, devices and operators.
    public var maximumConnections = 16
    /// Connections of the read side's own pool (GetMessage, ListMessages,
    /// CampaignReport), apart from `maximumConnections`.
    public var readConnections = 8
    /// `statement_timeout` of the read pool's connections: a read-side
    /// statement running longer is stopped (`StoreError.readTimedOut`).
    public var readTimeout: Duration = .seconds(5)
    /// Connections of the lease pool (renewal and takeover only), apart
    /// from the others: a lease is renewed in time whatever else waits.
    public var leaseConnections = 2
    /// This replica's name, recorded as the `owner` of its claims.
    public var replicaID: String
    /// How long a claim is leased (`lease_until` = claim time + this).
    public var leaseMilliseconds: Int64 = Self.defaultLeaseMilliseconds
    /// `leaseMilliseconds` unless set (`herald serve --lease-seconds`'s default).
    public static let defaultLeaseMilliseconds: Int64 = 30_000
    /// Up to this many rows in `messages` (the planner's estimate), Status
    /// counts finished states exactly; past it, it estimates them
    /// (`PostgresStore.countsByState`). Low: the exact count scans the
    /// table, and every replica refreshes Status each second (at 60,000
    /// rows that was a tenth of the server's time while two replicas
    /// dispatched).
    public var exactCountRows = 10_000
    /// How long `PostgresStore.close()` waits for the pool's connections to
    /// end before it returns without them (logged as an error).
    public var closeTimeout: Duration = .seconds(10)

    /// Parses `url`; throws a message naming what is wrong (never the
    /// password). `passfileEnvironment` is `PGPASSFILE`'s value (the
    /// process's environment by default).
    public init(
        url: String, replicaID: String, passfileEnvironment: String? = PostgresStoreConfiguration.environmentPassfile()
    ) throws(PostgresURLError) {
        var rest: Substring
        if url.hasPrefix("postgres://") {
            rest = url.dropFirst("postgres://".count)
        } else if url.hasPrefix("postgresql://") {
            rest = url.dropFirst("postgresql://".count)
        } else {
            throw PostgresURLError("must start with postgres:// or postgresql://")
        }
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        guard let slash = rest.firstIndex(of: "/") else {
            throw PostgresURLError("names no database (postgres://USER@HOST:PORT/DATABASE)")
        }
        let authority = rest[..<slash]
        let databaseText = rest[rest.index(after: slash)...]
        guard let at = authority.lastIndex(of: "@") else {
            throw PostgresURLError("names no user (postgres://USER@HOST:PORT/DATABASE)")
        }
        let userInfo = authority[..<at], hostPort = authority[authority.index(after: at)...]
        if let colon = userInfo.firstIndex(of: ":") {
            username = try Self.decode(userInfo[..<colon], "user")
            password = try Self.decode(userInfo[userInfo.index(after: colon)...], "password")
        } else {
            username = try Self.decode(userInfo, "user")
            password = nil
        }
        guard !username.isEmpty else { throw PostgresURLError("names no user") }
        database = try Self.decode(databaseText, "database")
        guard !database.isEmpty, !database.contains("/") else {
            throw PostgresURLError("needs one database name after the host (…/DATABASE)")
        }
        (host, port) = try Self.hostPort(hostPort)
        tls = .disable
        self.replicaID = replicaID
        var socketDirectory: String?
        var mode: TLSMode?
        var seen: Set<String> = []
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(parts[0]), value = parts.count > 1 ? try Self.decode(parts[1], key) : ""
            guard seen.insert(key).inserted else { throw PostgresURLError("gives \(key) twice") }
            switch key {
            case "sslmode":
                guard let given = TLSMode(rawValue: value) else {
                    throw PostgresURLError("sslmode must be one of disable, require, verify-ca, verify-full (got \(value))")
                }
                mode = given
            case "sslrootcert":
                guard !value.isEmpty else { throw PostgresURLError("sslrootcert needs a file name") }
                tlsRootCertificates = value
            case "passfile":
                guard !value.isEmpty else { throw PostgresURLError("passfile needs a file name") }
                passfile = value
            case "host":
                guard value.hasPrefix("/") else {
                    throw PostgresURLError("the host= parameter must be a unix socket directory (an absolute path)")
                }
                socketDirectory = value
            default:
                throw PostgresURLError("unknown parameter \(key) (known: sslmode, sslrootcert, passfile, host)")
            }
        }
        if let socketDirectory {
            if let mode, mode != .disable { throw PostgresURLError("sslmode must be disable with a unix socket (host=)") }
            unixSocketPath = (socketDirectory.hasSuffix("/") ? socketDirectory : socketDirectory + "/") + ".s.PGSQL.\(port)"
        }
        // The safe default: TLS with every check off loopback.
        tls = mode ?? (unixSocketPath != nil || isLoopbackHost(host) ? .disable : .verifyFull)
        if tlsRootCertificates != nil && tls == .disable {
            throw PostgresURLError("sslrootcert needs sslmode verify-full, verify-ca or require (sslmode is disable)")
        }
        if password == nil, let file = passfile ?? passfileEnvironment.flatMap({ $0.isEmpty ? nil : $0 }) {
            password = try PostgresPassfile.password(
                path: file, host: unixSocketPath == nil ? host : "localhost", port: port, database: database, user: username)
            passfile = file
        }
    }

    /// `PGPASSFILE` of the process's environment, if set.
    public static func environmentPassfile() -> String? {
        getenv("PGPASSFILE").map { String(cString: $0) }
    }

    /// The URL with the password replaced by `***` (for logs and errors).
    public var redactedURL: String {
        var url = "postgres://\(username)\(password == nil ? "" : ":***")@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)"
        var parameters = ["sslmode=\(tls.rawValue)"]
        if let tlsRootCertificates { parameters.append("sslrootcert=\(tlsRootCertificates)") }
        if let passfile { parameters.append("passfile=\(passfile)") }
        if let unixSocketPath { parameters.append("host=\(unixSocketPath)") }
        if !parameters.isEmpty { url += "?" + parameters.joined(separator: "&") }
        return url
    }

    public var description: String { redactedURL }

    // MARK: Parsing

    private static func hostPort(_ text: Substring) throws(PostgresURLError) -> (String, Int) {
        var host = text, portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw PostgresURLError("has an unclosed [ in its host") }
            host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty {
                throw PostgresURLError("has text after its host's ]")
            }
        } else if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        let port: Int
        if let portText {
            guard let value = Int(portText), (1...65_535).contains(value) else {
                throw PostgresURLError("port must be 1…65535 (got \(portText))")
            }
            port = value
        } else {
            port = 5432
        }
        // libpq allows an empty host (the default socket); the URL's host is
        // needed here unless host= names a socket directory.
        return (host.isEmpty ? "localhost" : String(host), port)
    }

    /// Percent-decoding (%XX); any other character, `+` too, is taken as it is.
    private static func decode(_ text: Substring, _ what: String) throws(PostgresURLError) -> String {
        guard text.contains("%") else { return String(text) }
        guard let bytes = PercentDecoding.bytes(text.utf8, plusIsSpace: false) else {
            throw PostgresURLError("has a bad percent-escape in its \(what)")
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A PostgreSQL URL that does not parse; the message never holds the password.
public struct PostgresURLError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String

    init(_ reason: String) { self.reason = reason }

    public var description: String { "PostgreSQL URL \(reason)" }
}
