import HeraldPrimitives

/// Why no access token: what to tell the caller, and whether trying again may help.
struct FCMTokenFailure: Error, Sendable, CustomStringConvertible {
    var description: String
    /// Unreachable endpoint, 5xx: a later attempt may succeed. invalid_grant, other 4xx, bad answers: not by itself.
    var retryable: Bool
}

/// Reads the token endpoint's answer: `{"access_token","expires_in","token_type"}`
/// on 200, `{"error","error_description"}` otherwise. Defensive throughout.
enum FCMTokenResponse {
    static let maximumTokenLength = 4096
    static let maximumLifetime: Int64 = 7 * 86_400

    static func parse(status: Int, body: [UInt8], truncated: Bool) -> Result<(token: String, expiresIn: Int64), FCMTokenFailure> {
        let object = truncated ? nil : (try? JSONParser.parse(body))?.objectValue
        guard status == 200 else {
            let retryable = status >= 500 || status == 429 || status == 408
            guard let object, let error = object["error"]?.stringValue else {
                return .failure(FCMTokenFailure(description: "HTTP \(status) without an OAuth error body", retryable: retryable))
            }
            var text = FCMErrorBody.sanitized(FCMErrorBody.clip(error, to: 64))
            if let detail = object["error_description"]?.stringValue {
                text += ": " + FCMErrorBody.sanitized(FCMErrorBody.clip(detail, to: 300))
            }
            return .failure(FCMTokenFailure(description: "HTTP \(status) \(text)", retryable: retryable))
        }
        guard let object else {
            return .failure(FCMTokenFailure(description: "HTTP 200 with a body that is not a JSON object", retryable: false))
        }
        guard let token = object["access_token"]?.stringValue, !token.isEmpty, token.utf8.count <= maximumTokenLength,
              token.utf8.allSatisfy(FCMServiceAccount.isVisibleASCII) else {
            return .failure(FCMTokenFailure(description: "the answer has no usable access_token", retryable: false))
        }
        guard let number = object["expires_in"]?.numberValue, let expiresIn = JSONValue.integer(fromNumber: number.rounded(.down)),
              expiresIn > 0, expiresIn <= maximumLifetime else {
            return .failure(FCMTokenFailure(description: "the answer has no usable expires_in", retryable: false))
        }
        if let type = object["token_type"] {
            guard type.stringValue?.lowercased() == "bearer" else {
                return .failure(FCMTokenFailure(description: "token_type is not Bearer", retryable: false))
            }
        }
        return .success((token, expiresIn))
    }
}
