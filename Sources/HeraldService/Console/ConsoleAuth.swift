import GRPCEngine
import HeraldCore
import HeraldPrimitives

/// Who is asking, from HTTP Basic credentials: the token is the password
/// (the user name is ignored; with an empty password the user name is taken
/// as the token, as `curl -u TOKEN:` sends it). Checked by the same
/// ``AccessPolicy`` as every RPC.
enum ConsoleCaller: Sendable {
    /// No tokens configured (loopback only): everything.
    case open
    /// No credentials: Status's unauthenticated view, no bundle's data.
    case anonymous
    case token(AccessPolicy.Grant)

    static let challenge = "Basic realm=\"herald console\", charset=\"UTF-8\""

    /// - Throws: 401 for credentials that are malformed or name no token.
    static func identify(_ policy: AccessPolicy, authorization: String?) throws(ConsoleRefusal) -> ConsoleCaller {
        guard !policy.isOpen else { return .open }
        guard let authorization else { return .anonymous }
        let scheme = "basic "
        guard authorization.utf8.count > scheme.utf8.count, authorization.prefix(scheme.count).lowercased() == scheme,
              let bytes = Base64.decodeURL(authorization.dropFirst(scheme.count).drop { $0 == " " }),
              let credentials = String(validating: bytes, as: UTF8.self),
              let colon = credentials.firstIndex(of: ":")
        else {
            throw ConsoleRefusal(.unauthorized, "the Authorization header must be HTTP Basic credentials with a Herald token as the password")
        }
        let password = credentials[credentials.index(after: colon)...]
        let token = password.isEmpty ? credentials[..<colon] : password
        do {
            guard let grant = try policy.authenticate(GRPCMetadata([("authorization", "Token \(token)")])) else { return .open }
            return .token(grant)
        } catch {
            throw ConsoleRefusal(.unauthorized, "unknown token")
        }
    }

    /// Status's view for this caller (StatusService's rule).
    var statusView: StatusService.View {
        switch self {
        case .open: .everything
        case .anonymous: .anonymous
        case .token(let grant): grant.bundleIDs.contains("*") ? .everything : .bundles(grant.bundleIDs)
        }
    }

    /// - Throws: 401 without credentials, 403 for a token that does not allow `bundleID`.
    func check(bundleID: String) throws(ConsoleRefusal) {
        switch self {
        case .open: return
        case .anonymous:
            throw ConsoleRefusal(.unauthorized, "this page shows a bundle's data: sign in with a token that allows \(ErrorText.quote(bundleID))")
        case .token(let grant):
            guard grant.allows(bundleID: bundleID) else {
                throw ConsoleRefusal(.forbidden, "token \"\(grant.label)\" does not allow bundle \(ErrorText.quote(bundleID))")
            }
        }
    }
}
