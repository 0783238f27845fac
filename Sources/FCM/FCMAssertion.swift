public import HeraldPrimitives
import TLSTransport

/// Signs the RS256 JWT a service account trades for an access token
/// (RFC 7523): header `{"alg":"RS256","typ":"JWT","kid":private_key_id}`,
/// claims `iss`, `scope`, `aud`, `iat`, `exp = iat + 3600`.
public struct FCMAssertionSigner: Sendable {
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    public static let lifetimeSeconds: Int64 = 3600

    public let account: FCMServiceAccount
    /// The JWT's `aud`: the token URL actually used.
    public let audience: String
    private let key: RSAPrivateKey

    public init(account: FCMServiceAccount, audience: String) throws {
        do {
            key = try RSAPrivateKey(pem: account.privateKeyPEM)
        } catch let error as TLSError {
            throw FCMError.invalidServiceAccount("private_key: \(error.message)")
        }
        self.account = account
        self.audience = audience
    }

    /// A signed assertion issued at `issuedAt` (whole seconds, rounded down).
    public func assertion(issuedAt: Timestamp) throws -> String {
        let iat = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        var header = JSONWriter(capacity: 128)
        header.writeRaw(#"{"alg":"RS256","typ":"JWT","kid":"#)
        header.writeString(account.privateKeyID)
        header.writeByte(UInt8(ascii: "}"))
        var claims = JSONWriter(capacity: 512)
        claims.writeRaw(#"{"iss":"#)
        claims.writeString(account.clientEmail)
        claims.writeRaw(#","scope":"#)
        claims.writeString(Self.scope)
        claims.writeRaw(#","aud":"#)
        claims.writeString(audience)
        claims.writeRaw(#","iat":"#)
        claims.writeInteger(iat)
        claims.writeRaw(#","exp":"#)
        claims.writeInteger(iat + Self.lifetimeSeconds)
        claims.writeByte(UInt8(ascii: "}"))
        let signingInput = Base64.encode(header.bytes, url: true) + "." + Base64.encode(claims.bytes, url: true)
        let signature: [UInt8]
        do {
            signature = try key.signRS256(Array(signingInput.utf8))
        } catch let error as TLSError {
            throw FCMError.invalidServiceAccount("cannot sign with private_key: \(error.message)")
        }
        return signingInput + "." + Base64.encode(signature, url: true)
    }

    /// The form body of the token request.
    public func tokenRequestBody(issuedAt: Timestamp) throws -> [UInt8] {
        // The assertion is base64url and dots: nothing in it needs escaping.
        try Array(("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion(issuedAt: issuedAt)).utf8)
    }
}
