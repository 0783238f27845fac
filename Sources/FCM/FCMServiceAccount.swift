import HeraldPrimitives
import TLSTransport

/// A Google service-account JSON key (the file the Firebase console downloads).
public struct FCMServiceAccount: Sendable {
    public var projectID: String
    public var clientEmail: String
    public var privateKeyID: String
    /// The RSA private key, PKCS#8 PEM.
    public var privateKeyPEM: String
    /// The OAuth 2.0 token endpoint (the JWT's `aud`).
    public var tokenURI: String

    /// Google's token endpoint, used when a key has no `token_uri`.
    public static let defaultTokenURI = "https://oauth2.googleapis.com/token"
    /// Larger key files are refused unread (a real one is about 2.3 KB).
    public static let maximumJSONSize = 64 * 1024

    public init(projectID: String, clientEmail: String, privateKeyID: String, privateKeyPEM: String, tokenURI: String = defaultTokenURI) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.privateKeyPEM = privateKeyPEM
        self.tokenURI = tokenURI
    }

    /// Parses and checks a key file; ``FCMError/invalidServiceAccount(_:)`` names the field at fault.
    /// The private key is loaded once here, so a non-RSA or damaged key fails now, not at the first send.
    public static func parse(json: [UInt8]) throws -> FCMServiceAccount {
        guard !json.isEmpty else { throw FCMError.invalidServiceAccount("the key file is empty") }
        guard json.count <= maximumJSONSize else {
            throw FCMError.invalidServiceAccount("the key file is \(json.count) bytes; at most \(maximumJSONSize)")
        }
        let object: JSONObject
        do {
            guard let parsed = try JSONParser.parse(json).objectValue else {
                throw FCMError.invalidServiceAccount("the key file is not a JSON object")
            }
            object = parsed
        } catch let error as JSONParseError {
            throw FCMError.invalidServiceAccount("the key file is not JSON: \(error)")
        }
        if let type = object["type"] {
            guard type.stringValue == "service_account" else {
                throw FCMError.invalidServiceAccount("type: expected \"service_account\"")
            }
        }
        let account = FCMServiceAccount(
            projectID: try field("project_id", in: object, maximum: 128),
            clientEmail: try field("client_email", in: object, maximum: 320),
            privateKeyID: try field("private_key_id", in: object, maximum: 256),
            privateKeyPEM: try field("private_key", in: object, maximum: 16_384),
            tokenURI: object["token_uri"] == nil ? defaultTokenURI : try field("token_uri", in: object, maximum: 2048))
        try account.validate()
        return account
    }

    /// Checks every field (also for an account built in code); loads the key.
    public func validate() throws {
        guard !projectID.isEmpty, projectID.utf8.allSatisfy(Self.isProjectIDByte) else {
            throw FCMError.invalidServiceAccount("project_id: letters, digits, '-', '.', ':' and '_' only")
        }
        guard clientEmail.contains("@"), clientEmail.utf8.allSatisfy(Self.isVisibleASCII) else {
            throw FCMError.invalidServiceAccount("client_email: not an e-mail address")
        }
        guard !privateKeyID.isEmpty, privateKeyID.utf8.allSatisfy(Self.isVisibleASCII) else {
            throw FCMError.invalidServiceAccount("private_key_id: visible ASCII only")
        }
        do {
            _ = try FCMTokenURL(tokenURI)
        } catch {
            throw FCMError.invalidServiceAccount("token_uri: \(error)")
        }
        do {
            _ = try RSAPrivateKey(pem: privateKeyPEM)
        } catch let error as TLSError {
            throw FCMError.invalidServiceAccount("private_key: \(error.message)")
        }
    }

    private static func field(_ name: String, in object: JSONObject, maximum: Int) throws -> String {
        guard let value = object[name] else { throw FCMError.invalidServiceAccount("\(name): missing") }
        guard let text = value.stringValue else { throw FCMError.invalidServiceAccount("\(name): not a string") }
        guard !text.isEmpty else { throw FCMError.invalidServiceAccount("\(name): empty") }
        guard text.utf8.count <= maximum else { throw FCMError.invalidServiceAccount("\(name): longer than \(maximum) bytes") }
        guard !text.utf8.contains(0) else { throw FCMError.invalidServiceAccount("\(name): contains a NUL byte") }
        return text
    }

    static func isVisibleASCII(_ byte: UInt8) -> Bool { byte > 0x20 && byte < 0x7f }

    static func isProjectIDByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }
}

/// A parsed `https://host[:port]/path` token URL.
struct FCMTokenURL: Sendable, Equatable, CustomStringConvertible {
    var host: String
    var port: Int
    var path: String

    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    init(_ text: String) throws {
        guard text.hasPrefix("https://") else { throw Invalid(description: "not an https:// URL") }
        guard text.utf8.count <= 2048, text.utf8.allSatisfy(FCMServiceAccount.isVisibleASCII) else {
            throw Invalid(description: "not a plain URL")
        }
        let rest = text.dropFirst("https://".count)
        let authority = rest.prefix { $0 != "/" }
        path = rest.count > authority.count ? String(rest.dropFirst(authority.count)) : "/"
        guard !authority.contains("@") else { throw Invalid(description: "user info is not allowed") }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw Invalid(description: "bad IPv6 host") }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            port = after.isEmpty ? 443 : try Self.port(after.dropFirst(), whole: after.first == ":")
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            port = try Self.port(authority[authority.index(after: colon)...], whole: true)
        } else {
            host = String(authority)
            port = 443
        }
        guard !host.isEmpty else { throw Invalid(description: "no host") }
        if path.contains("#") { throw Invalid(description: "fragments are not allowed") }
    }

    private static func port(_ text: Substring, whole: Bool) throws -> Int {
        guard whole, let port = Int(text), (1...65_535).contains(port) else { throw Invalid(description: "bad port") }
        return port
    }

    var description: String { "https://\(host):\(port)\(path)" }
}
