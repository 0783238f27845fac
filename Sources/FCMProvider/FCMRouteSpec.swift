public import FCM
import HeraldPrimitives
public import Logging

/// One FCM route as an operator writes it: space-separated `key=value`
/// pairs, e.g.
///
///     project=my-app-prod key=/etc/herald/my-app-sa.json bundles=com.example.app,com.example.lite
///
/// Keys: `project` (the Firebase project id, required), `key` (the
/// service-account JSON key file, required), `bundles` (Android package
/// names, comma-separated, or `*`; default `*`), `endpoint` (`host:port`;
/// default `fcm.googleapis.com:443`), `token-url` (`https://…`; default the
/// key's `token_uri`), `ca` (a PEM CA file to trust instead of the system
/// store).
public struct FCMRouteSpec: Sendable, Equatable {
    public var projectID: String
    public var keyPath: String
    public var bundleIDs: Set<String>
    public var endpoint: FCMEndpoint?
    public var tokenURL: String?
    public var caFile: String?
    /// Where it was given (`--fcm-route #1`, `HERALD_FCM_ROUTE`, `FILE:LINE`): errors name it.
    public var source: String

    public struct ParseError: Error, CustomStringConvertible {
        public var description: String
    }

    static let keys: Set<String> = ["project", "key", "bundles", "endpoint", "token-url", "ca"]

    public static func parse(_ text: String, source: String) throws -> FCMRouteSpec {
        var fields: [String: String] = [:]
        for pair in text.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !parts[1].isEmpty else {
                throw ParseError(description: "\(source): \"\(pair)\" is not key=value")
            }
            let key = String(parts[0])
            guard keys.contains(key) else {
                throw ParseError(description: "\(source): unknown key \"\(key)\" (project, key, bundles, endpoint, token-url, ca)")
            }
            guard fields.updateValue(String(parts[1]), forKey: key) == nil else {
                throw ParseError(description: "\(source): \"\(key)\" given twice")
            }
        }
        guard let project = fields["project"] else { throw ParseError(description: "\(source): project=ID is required") }
        guard project.utf8.count <= 128, project.utf8.allSatisfy({ isProjectByte($0) }) else {
            throw ParseError(description: "\(source): project must be a Firebase project id (letters, digits, '-', '.', ':', '_'), not \"\(project)\"")
        }
        guard let key = fields["key"] else { throw ParseError(description: "\(source): key=service-account.json is required") }
        var endpoint: FCMEndpoint?
        if let text = fields["endpoint"] {
            guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
                  (1...65535).contains(port), colon != text.startIndex
            else { throw ParseError(description: "\(source): endpoint must be host:port, not \"\(text)\"") }
            endpoint = FCMEndpoint(host: String(text[..<colon]), port: port)
        }
        if let url = fields["token-url"] {
            guard url.hasPrefix("https://"), url.utf8.count > "https://".utf8.count, !url.contains(where: { $0.isWhitespace }) else {
                throw ParseError(description: "\(source): token-url must be an https:// URL, not \"\(url)\"")
            }
        }
        let bundles = Set((fields["bundles"] ?? "*").split(separator: ",").map(String.init))
        guard !bundles.isEmpty else { throw ParseError(description: "\(source): bundles must name at least one package or *") }
        return FCMRouteSpec(
            projectID: project, keyPath: key, bundleIDs: bundles, endpoint: endpoint, tokenURL: fields["token-url"],
            caFile: fields["ca"], source: source)
    }

    private static func isProjectByte(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A) || c == 0x2D || c == 0x2E || c == 0x3A || c == 0x5F
    }

    /// Reads a routes file: one route per line, `#` comments.
    public static func parseFile(path: String) throws -> [FCMRouteSpec] {
        // It names service-account keys: kept private like them.
        try POSIXFile.requireOwnerOnly(path, what: "FCM routes file")
        let text: String
        do { text = try POSIXFile.readText(path) } catch {
            throw ParseError(description: "cannot read FCM routes file \(path): \(error)")
        }
        var routes: [FCMRouteSpec] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            if line.allSatisfy(\.isWhitespace) { continue }
            routes.append(try parse(String(line), source: "\(path):\(number + 1)"))
        }
        return routes
    }

    /// Reads and checks the service-account key (JSON fields, an RSA
    /// private key that loads): the error names the route.
    func serviceAccount() throws -> FCMServiceAccount {
        do { try POSIXFile.requireOwnerOnly(keyPath, what: "FCM service-account key") } catch {
            throw ParseError(description: "FCM route \(source) (project=\(projectID)): \(error)")
        }
        let bytes: [UInt8]
        do { bytes = Array(try POSIXFile.readText(keyPath).utf8) } catch {
            throw ParseError(description: "FCM route \(source) (project=\(projectID)): cannot read the service-account key \(keyPath): \(error)")
        }
        do {
            return try FCMServiceAccount.parse(json: bytes)  // loads the private key too
        } catch {
            throw ParseError(description: "FCM route \(source) (project=\(projectID)): the service-account key \(keyPath) is not usable: \(error)")
        }
    }

    /// Builds the gateway's routes: routes with the same project, key,
    /// endpoint, token URL and CA share one client. A route whose identity
    /// matches one of `reusing` keeps that route's client (a reload opens new
    /// connections only for routes that changed).
    public static func makeRoutes(
        _ specs: [FCMRouteSpec], ratePerMinute: Int, reusing old: [FCMGateway.Route] = [], logger: Logger = Logger(label: "herald")
    ) throws -> [FCMGateway.Route] {
        var pools: [String: FCMClient] = [:]
        for route in old where !route.identity.isEmpty { pools[route.identity] = route.client }
        var routes: [FCMGateway.Route] = []
        for spec in specs {
            let account = try spec.serviceAccount()
            let endpoint = spec.endpoint ?? .production
            let secret = account.clientEmail + "\u{0}" + account.privateKeyID + "\u{0}" + account.privateKeyPEM + "\u{0}" + account.tokenURI
            let identity = [spec.projectID, "\(endpoint.host):\(endpoint.port)", spec.tokenURL ?? "", spec.caFile ?? "",
                            "\(ratePerMinute)", secret].joined(separator: "\u{0}")
            let client: FCMClient
            if let pooled = pools[identity] {
                client = pooled
            } else {
                let configuration = FCMClientConfiguration(
                    serviceAccount: account, endpoint: endpoint, tokenURL: spec.tokenURL, caFile: spec.caFile,
                    ratePerMinute: ratePerMinute)
                do {
                    client = try FCMClient(configuration: configuration, logger: logger)
                } catch {
                    throw ParseError(description: "FCM route \(spec.source) (project=\(spec.projectID)): \(error)")
                }
                pools[identity] = client
            }
            var route = FCMGateway.Route(
                bundleIDs: spec.bundleIDs, projectID: spec.projectID, client: client, endpoint: "\(endpoint.host):\(endpoint.port)")
            route.identity = identity
            routes.append(route)
        }
        return routes
    }
}
