import HeraldPrimitives
import TLSTransport

/// The provider token a connection uses, as APNs tracks it.
struct ConnectionTokenState {
    var token: String?
    var issuedAt: Int64 = 0
}

/// Apple's checks, in APNs' order, as pure functions over one request.
enum RequestValidator {
    enum Outcome: Equatable {
        case accept(deviceToken: String, apnsID: String)
        case reject(status: Int, reason: String, apnsID: String)
    }

    static let pushTypes: Set<String> = [
        "alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity",
        "pushtotalk", "widgets",
    ]

    static func validate(
        headers: [(name: String, value: String)], body: [UInt8], bodyTooLarge: Bool,
        certificateAuthenticated: Bool, tokenState: inout ConnectionTokenState, state: SimulatorState
    ) -> Outcome {
        let configuration = state.configuration
        var seen: Set<String> = []
        var duplicate = false
        var method = "", path = ""
        var values: [String: String] = [:]
        for (name, value) in headers {
            if name == ":method" { method = value; continue }
            if name == ":path" { path = value; continue }
            if name.hasPrefix("apns-") || name == "authorization" {
                if !seen.insert(name).inserted { duplicate = true }
                values[name] = value
            }
        }
        var apnsID = values["apns-id"] ?? ""
        let generatedID = apnsID.isEmpty
        if generatedID { apnsID = UUIDv4.make() }
        func reject(_ status: Int, _ reason: String) -> Outcome { .reject(status: status, reason: reason, apnsID: apnsID) }

        guard method == "POST" else { return reject(405, "MethodNotAllowed") }
        let prefix = "/3/device/"
        guard path.hasPrefix(prefix) else { return reject(404, "BadPath") }
        let deviceToken = String(path.dropFirst(prefix.count))
        guard !deviceToken.isEmpty else { return reject(400, "MissingDeviceToken") }
        guard isDeviceToken(deviceToken) else { return reject(400, "BadDeviceToken") }
        if duplicate { return reject(400, "DuplicateHeaders") }
        if !generatedID && !isUUID(apnsID) { return reject(400, "BadMessageId") }

        if let authorization = values["authorization"] {
            if let failure = checkProviderToken(authorization, tokenState: &tokenState, state: state) {
                return reject(failure.0, failure.1)
            }
        } else if !certificateAuthenticated && !configuration.allowMissingProviderToken {
            return reject(403, "MissingProviderToken")
        }

        guard let topic = values["apns-topic"], !topic.isEmpty else { return reject(400, "MissingTopic") }
        if let allowed = configuration.allowedTopics, !allowed.contains(topic) { return reject(400, "TopicDisallowed") }
        let pushType = values["apns-push-type"] ?? "alert"
        guard pushTypes.contains(pushType) else { return reject(400, "InvalidPushType") }
        if let priority = values["apns-priority"] {
            guard priority == "10" || priority == "5" || priority == "1" else { return reject(400, "BadPriority") }
            if priority == "10" && pushType == "background" { return reject(400, "BadPriority") }
        }
        if let expiration = values["apns-expiration"] {
            guard !expiration.isEmpty, expiration.utf8.count <= 19, expiration.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                return reject(400, "BadExpirationDate")
            }
        }
        if let collapseID = values["apns-collapse-id"], collapseID.utf8.count > 64 {
            return reject(400, "BadCollapseId")
        }
        if bodyTooLarge || body.count > 4096 { return reject(413, "PayloadTooLarge") }
        // No usable notification dictionary: APNs documents no separate reason for bad JSON.
        guard !body.isEmpty, isJSONObject(body) else { return reject(400, "PayloadEmpty") }
        return .accept(deviceToken: deviceToken, apnsID: apnsID)
    }

    /// Hex, even length, 64…200 characters (APNs tokens are 32 bytes today, may grow).
    static func isDeviceToken(_ token: String) -> Bool {
        let bytes = token.utf8
        guard bytes.count >= 64, bytes.count <= 200, bytes.count % 2 == 0 else { return false }
        return bytes.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) || ($0 >= 65 && $0 <= 70) }
    }

    static func isUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                if byte != UInt8(ascii: "-") { return false }
            } else if !((byte >= 48 && byte <= 57) || (byte >= 97 && byte <= 102) || (byte >= 65 && byte <= 70)) {
                return false
            }
        }
        return true
    }

    static func isJSONObject(_ body: [UInt8]) -> Bool {
        (try? JSONParser.parse(body))?.objectValue != nil
    }

    /// nil when the token is acceptable; else (status, reason).
    static func checkProviderToken(
        _ authorization: String, tokenState: inout ConnectionTokenState, state: SimulatorState
    ) -> (Int, String)? {
        let configuration = state.configuration
        let lower = authorization.prefix(7).lowercased()
        guard lower == "bearer " else { return (403, "InvalidProviderToken") }
        let jwt = String(authorization.dropFirst(7))
        let issuedAt: Int64
        if jwt == tokenState.token {
            issuedAt = tokenState.issuedAt
        } else {
            guard let claims = verify(jwt, state: state) else { return (403, "InvalidProviderToken") }
            if tokenState.token != nil {
                if Double(claims - tokenState.issuedAt) < configuration.minimumTokenUpdateInterval.timeInterval {
                    return (429, "TooManyProviderTokenUpdates")
                }
                state.countTokenUpdate()
            }
            tokenState.token = jwt
            tokenState.issuedAt = claims
            issuedAt = claims
        }
        let age = configuration.now().timeIntervalSince1970 - Double(issuedAt)
        if age > configuration.providerTokenLifetime.timeInterval { return (403, "ExpiredProviderToken") }
        return nil
    }

    /// Checks the JWT's form, `alg`, `kid`, `iss` and signature; returns `iat`.
    static func verify(_ jwt: String, state: SimulatorState) -> Int64? {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].utf8.count < 1024, parts[1].utf8.count < 1024, parts[2].utf8.count < 256,
              let headerBytes = base64URLDecode(parts[0]), let claimsBytes = base64URLDecode(parts[1]),
              let signature = base64URLDecode(parts[2]),
              let header = (try? JSONParser.parse(headerBytes))?.objectValue,
              let claims = (try? JSONParser.parse(claimsBytes))?.objectValue,
              header["alg"]?.stringValue == "ES256",
              let kid = header["kid"]?.stringValue, let iss = claims["iss"]?.stringValue,
              let iat = claims["iat"]?.numberValue.flatMap(JSONValue.integer(fromNumber:))
        else { return nil }
        let configuration = state.configuration
        if let keyID = configuration.keyID, keyID != kid { return nil }
        if let teamID = configuration.teamID, teamID != iss { return nil }
        if let verifier = state.verifier {
            let signingInput = Array(jwt.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
            guard ES256.verify(signature, over: signingInput, with: verifier) else { return nil }
        }
        return iat
    }

    static func base64URLDecode(_ text: Substring) -> [UInt8]? {
        Base64.decodeURL(text)
    }
}
