public import HeraldPrimitives
import Synchronization
import TLSTransport

/// Signs APNs provider tokens: ES256 JWT `{"alg":"ES256","kid":…}.{"iss":…,"iat":…}`.
public struct APNsTokenSigner: Sendable {
    public let keyID: String
    public let teamID: String
    private let key: PrivateKey

    /// - Parameter privateKeyPEM: the .p8 file's text (PKCS#8 PEM, EC P-256).
    public init(keyID: String, teamID: String, privateKeyPEM: String) throws {
        do {
            key = try PrivateKey(pem: privateKeyPEM)
        } catch {
            throw APNsError.configuration("APNs key \(keyID): \(error)")
        }
        guard key.isP256 else { throw APNsError.configuration("APNs key \(keyID) is not an EC P-256 key") }
        self.keyID = keyID
        self.teamID = teamID
    }

    /// A signed token issued at `issuedAt` (whole seconds).
    public func token(issuedAt: Timestamp) throws -> String {
        let iat = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        let header = #"{"alg":"ES256","kid":"\#(jsonEscaped(keyID))"}"#
        let claims = #"{"iss":"\#(jsonEscaped(teamID))","iat":\#(iat)}"#
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature = try ES256.sign(Array(signingInput.utf8), with: key)
        return signingInput + "." + Base64URL.encode(signature)
    }

    private func jsonEscaped(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            if character == "\\" || character == "\"" { escaped.unicodeScalars.append("\\") }
            escaped.unicodeScalars.append(character)
        }
        return escaped
    }
}

/// The provider token shared by a pool's connections: reused until it is
/// `refreshAge` old, re-minted at most once per `minimumInterval` unless APNs
/// said it expired.
final class ProviderTokenCache: Sendable {
    /// One minted token, shared (a reference) by every stream that goes out with it.
    final class Token: Sendable {
        let value: String
        /// `authorization`'s value, made once per token rather than per request.
        let authorization: String
        let issuedAt: Timestamp

        init(value: String, issuedAt: Timestamp) {
            self.value = value
            self.authorization = "bearer " + value
            self.issuedAt = issuedAt
        }
    }

    private let signer: APNsTokenSigner
    private let refreshAge: Double
    private let minimumInterval: Double
    private let state = Mutex<Token?>(nil)
    private let mintCount = Mutex<Int>(0)

    init(signer: APNsTokenSigner, refreshAge: Duration, minimumInterval: Duration) {
        self.signer = signer
        self.refreshAge = refreshAge.timeInterval
        self.minimumInterval = minimumInterval.timeInterval
    }

    /// How many tokens were minted (for tests and status).
    var minted: Int { mintCount.withLock { $0 } }

    /// The token to use now.
    func current(now: Timestamp) throws -> Token {
        try state.withLock { token in
            if let existing = token {
                let age = now.timeIntervalSince(existing.issuedAt)
                if age < refreshAge || age < minimumInterval { return existing }
            }
            let fresh = Token(value: try signer.token(issuedAt: now), issuedAt: now)
            token = fresh
            mintCount.withLock { $0 += 1 }
            return fresh
        }
    }

    /// APNs answered ExpiredProviderToken for `value`: drop it so the next
    /// `current` mints a new one (only if it is still the current token, so many
    /// failures with one token cause one refresh).
    func expire(_ expired: Token) {
        state.withLock { token in
            if token?.value == expired.value { token = nil }
        }
    }
}

/// base64url without padding (RFC 7515 §2).
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        Base64.encode(bytes, url: true)
    }

    public static func decode(_ text: Substring) -> [UInt8]? {
        Base64.decodeURL(text)
    }
}
