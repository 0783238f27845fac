import HeraldPrimitives

/// Google's OAuth2 token endpoint for service accounts (RFC 7523 JWT bearer
/// grant): checks the assertion, mints an access token for its project.
enum TokenEndpoint {
    static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// Clock skew allowed on `iat` and `exp`.
    static let skew = 60.0
    /// The longest assertion lifetime (`exp - iat`).
    static let maxLifetime = 3600.0

    /// The answer to `POST /token` with `body` (form-encoded).
    static func answer(body: [UInt8], bodyTooLarge: Bool, state: FCMSimulatorState) -> FCMReply {
        if bodyTooLarge { return .oauthError("invalid_request", "The request body is too large.") }
        guard let form = FormDecoder.decode(body) else {
            return .oauthError("invalid_request", "The request body is not application/x-www-form-urlencoded.")
        }
        guard let grant = form["grant_type"] else { return .oauthError("invalid_request", "Missing required parameter: grant_type") }
        guard grant == grantType else { return .oauthError("unsupported_grant_type", "Invalid grant_type: \(grant.prefix(100))") }
        guard let assertion = form["assertion"] else { return .oauthError("invalid_request", "Missing required parameter: assertion") }
        if state.nextGrantFails() { return .oauthError("invalid_grant", "Injected fault: invalid_grant.") }
        switch verify(assertion, state: state) {
        case .failure(let reason):
            return .oauthError("invalid_grant", reason.description)
        case .success(let account):
            let token = state.mintAccessToken(projectID: account.projectID)
            return .accessToken(token, expiresIn: Int(state.configuration.accessTokenLifetime.timeInterval.rounded()))
        }
    }

    struct Refusal: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// The account whose key signed `jwt`, after every claim check.
    static func verify(_ jwt: String, state: FCMSimulatorState) -> Result<FCMSimulatedAccount, Refusal> {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return .failure(Refusal("Invalid JWT: not three dot-separated parts.")) }
        guard parts[0].utf8.count <= 1024, parts[1].utf8.count <= 4096, parts[2].utf8.count <= 1024 else {
            return .failure(Refusal("Invalid JWT: too large."))
        }
        guard let headerBytes = Base64.decodeURL(parts[0]), let claimsBytes = Base64.decodeURL(parts[1]),
              let signature = Base64.decodeURL(parts[2]),
              let header = (try? JSONParser.parse(headerBytes))?.objectValue,
              let claims = (try? JSONParser.parse(claimsBytes))?.objectValue
        else { return .failure(Refusal("Invalid JWT: the header, claims or signature is not base64url JSON.")) }
        guard header["alg"]?.stringValue == "RS256" else { return .failure(Refusal("Invalid JWT: alg must be RS256.")) }
        if let type = header["typ"], type != "JWT" { return .failure(Refusal("Invalid JWT: typ must be JWT.")) }
        guard let kid = header["kid"]?.stringValue else { return .failure(Refusal("Invalid JWT: no kid.")) }
        guard let issuer = claims["iss"]?.stringValue else { return .failure(Refusal("Invalid JWT: no iss.")) }
        guard let verifier = state.verifiers.first(where: {
            $0.account.privateKeyID == kid && $0.account.clientEmail == issuer
        }) else {
            return .failure(Refusal("Invalid JWT Signature: no service account \(issuer.prefix(200)) with key \(kid.prefix(100))."))
        }
        let signingInput = Array(jwt.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard verifier.verifies(signature: signature, over: signingInput) else {
            return .failure(Refusal("Invalid JWT Signature."))
        }
        let audience = claims["aud"]?.stringValue ?? ""
        guard audiences(state: state).contains(audience) else {
            return .failure(Refusal("Invalid JWT: aud \(audience.prefix(200)) is not this token endpoint."))
        }
        let scopes = (claims["scope"]?.stringValue ?? "").split(separator: " ")
        guard scopes.contains(Substring(scope)) else {
            return .failure(Refusal("Invalid JWT: scope must include \(scope)."))
        }
        guard let iat = claims["iat"]?.numberValue, let exp = claims["exp"]?.numberValue, iat.isFinite, exp.isFinite else {
            return .failure(Refusal("Invalid JWT: iat and exp must be numbers."))
        }
        let now = state.now.timeIntervalSince1970
        guard iat <= now + skew else { return .failure(Refusal("Invalid JWT: iat is in the future.")) }
        guard exp > iat, exp - iat <= maxLifetime, exp > now - skew else {
            return .failure(Refusal(
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values."))
        }
        return .success(verifier.account)
    }

    /// The token URLs a client may name as `aud`.
    static func audiences(state: FCMSimulatorState) -> Set<String> {
        let port = state.port
        let host = state.configuration.host.contains(":") ? "[\(state.configuration.host)]" : state.configuration.host
        return Set(["127.0.0.1", "localhost", host].map { "https://\($0):\(port)\(FCMSimulator.tokenPath)" })
    }
}

/// `application/x-www-form-urlencoded` (`+` is a space, `%XX` a byte).
enum FormDecoder {
    /// The fields (the last of duplicates wins); nil for bad escapes or non-UTF-8.
    static func decode(_ body: [UInt8]) -> [String: String]? {
        var fields: [String: String] = [:]
        for pair in body.split(separator: UInt8(ascii: "&")) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = unescape(parts[0]), let value = unescape(parts.count > 1 ? parts[1] : []) else { return nil }
            fields[name] = value
        }
        return fields
    }

    static func unescape(_ bytes: ArraySlice<UInt8>) -> String? {
        PercentDecoding.bytes(bytes, plusIsSpace: true).flatMap { String(validating: $0, as: UTF8.self) }
    }
}
