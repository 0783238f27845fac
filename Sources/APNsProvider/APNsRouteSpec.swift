public import APNs
public import HeraldCore
import HeraldPrimitives
import HeraldStorage

/// One APNs route as an operator writes it: space-separated `key=value`
/// pairs, e.g.
///
///     team=ABCDE12345 key-id=KEY1234567 key=/etc/herald/AuthKey.p8 bundles=com.a,com.b env=production
///     cert=/etc/herald/push.pem cert-key=/etc/herald/push.key bundles=com.c env=sandbox
///
/// Keys: `team`, `key-id`, `key` (.p8 file: token auth) or `cert` +
/// `cert-key` (PEM files: certificate auth); `bundles` (comma-separated, or
/// `*`; default `*`); `env` (`production`, `sandbox` or `both`; default
/// `production`); `endpoint` (`host:port`; default Apple's for `env`);
/// `ca` (a CA file to trust instead of the system store).
public struct APNsRouteSpec: Sendable, Equatable {
    public enum Auth: Sendable, Equatable {
        case token(teamID: String, keyID: String, keyPath: String)
        case certificate(certificatePath: String, keyPath: String)
    }

    public var auth: Auth
    public var bundleIDs: Set<String>
    /// nil: both environments.
    public var environment: APNsEnvironment?
    public var endpoint: APNsEndpoint?
    public var caFile: String?

    public struct ParseError: Error, CustomStringConvertible {
        public var description: String
    }

    public static func parse(_ text: String, source: String) throws -> APNsRouteSpec {
        var fields: [String: String] = [:]
        for pair in text.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !parts[1].isEmpty else {
                throw ParseError(description: "\(source): \"\(pair)\" is not key=value")
            }
            let key = String(parts[0])
            guard ["team", "key-id", "key", "cert", "cert-key", "bundles", "env", "endpoint", "ca"].contains(key) else {
                throw ParseError(description: "\(source): unknown key \"\(key)\"")
            }
            guard fields.updateValue(String(parts[1]), forKey: key) == nil else {
                throw ParseError(description: "\(source): \"\(key)\" given twice")
            }
        }
        let auth: Auth
        switch (fields["team"], fields["key-id"], fields["key"], fields["cert"], fields["cert-key"]) {
        case let (team?, keyID?, key?, nil, nil): auth = .token(teamID: team, keyID: keyID, keyPath: key)
        case let (nil, nil, nil, cert?, certKey?): auth = .certificate(certificatePath: cert, keyPath: certKey)
        default:
            throw ParseError(description: "\(source): give either team, key-id and key (token auth) or cert and cert-key (certificate auth)")
        }
        var environment: APNsEnvironment? = .production
        switch fields["env"] ?? "production" {
        case "production": environment = .production
        case "sandbox": environment = .sandbox
        case "both": environment = nil
        case let other: throw ParseError(description: "\(source): env must be production, sandbox or both, not \"\(other)\"")
        }
        var endpoint: APNsEndpoint?
        if let text = fields["endpoint"] {
            guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
                  (1...65535).contains(port), colon != text.startIndex
            else { throw ParseError(description: "\(source): endpoint must be host:port, not \"\(text)\"") }
            endpoint = APNsEndpoint(host: String(text[..<colon]), port: port)
        }
        let bundles = Set((fields["bundles"] ?? "*").split(separator: ",").map(String.init))
        return APNsRouteSpec(auth: auth, bundleIDs: bundles, environment: environment, endpoint: endpoint, caFile: fields["ca"])
    }

    /// Reads a routes file: one route per line, `#` comments.
    public static func parseFile(path: String) throws -> [APNsRouteSpec] {
        // It names key files: kept private like them.
        try POSIXFile.requireOwnerOnly(path, what: "APNs routes file")
        let text: String
        do { text = try POSIXFile.readText(path) } catch {
            throw ParseError(description: "cannot read APNs routes file \(path): \(error)")
        }
        var routes: [APNsRouteSpec] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            if line.allSatisfy(\.isWhitespace) { continue }
            routes.append(try parse(String(line), source: "\(path):\(number + 1)"))
        }
        return routes
    }

    /// Builds the gateway's routes: token routes of one team and key share a
    /// pool per endpoint, and keys of different teams never share one. A
    /// route whose pool key, credentials (the files' contents), CA and
    /// timeout match one of `reusing` keeps that route's client (a reload
    /// opens new connections only for routes that changed).
    public static func makeRoutes(
        _ specs: [APNsRouteSpec], responseTimeout: Duration = .seconds(30), reusing old: [APNsGateway.Route] = []
    ) throws -> [APNsGateway.Route] {
        var pools: [String: APNsClient] = [:]
        for route in old where !route.identity.isEmpty { pools[route.identity] = route.client }
        var routes: [APNsGateway.Route] = []
        for spec in specs {
            let environments: [APNsEnvironment] = spec.environment.map { [$0] } ?? [.production, .sandbox]
            for environment in environments {
                let endpoint = spec.endpoint ?? (environment == .production ? .production : .sandbox)
                let read = { (path: String) throws -> String in
                    do { return try POSIXFile.readText(path) } catch {
                        throw ParseError(description: "cannot read \(path): \(error)")
                    }
                }
                let key: APNsPoolKey
                let credentials: APNsCredentials
                let secret: String
                switch spec.auth {
                case let .token(teamID, keyID, keyPath):
                    key = .token(teamID: teamID, keyID: keyID, endpoint: endpoint)
                    try POSIXFile.requireOwnerOnly(keyPath, what: "APNs signing key")
                    secret = try read(keyPath)
                    credentials = .token(keyID: keyID, teamID: teamID, privateKeyPEM: secret)
                case let .certificate(certificatePath, keyPath):
                    key = APNsPoolKey(credentialID: "cert:\(certificatePath)", endpoint: endpoint)
                    let certificate = try read(certificatePath)
                    try POSIXFile.requireOwnerOnly(keyPath, what: "APNs certificate private key")
                    let privateKey = try read(keyPath)
                    secret = certificate + "\u{0}" + privateKey
                    credentials = .certificate(certificatePEM: certificate, privateKeyPEM: privateKey)
                }
                let identity = "\(key)\u{0}\(spec.caFile ?? "")\u{0}\(responseTimeout)\u{0}\(secret)"
                let client: APNsClient
                if let pooled = pools[identity] {
                    client = pooled
                } else {
                    var configuration = APNsClientConfiguration(endpoint: endpoint, credentials: credentials)
                    configuration.trustedCAFile = spec.caFile
                    configuration.responseTimeout = responseTimeout
                    client = try APNsClient(configuration: configuration)
                    pools[identity] = client
                }
                var route = APNsGateway.Route(
                    bundleIDs: spec.bundleIDs, environment: environment, client: client,
                    name: "\(key) bundles=\(spec.bundleIDs.sorted().joined(separator: ","))")
                route.identity = identity
                routes.append(route)
            }
        }
        return routes
    }
}
