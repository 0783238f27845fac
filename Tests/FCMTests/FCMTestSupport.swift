@testable import FCM
import Foundation
import Testing
import HeraldPrimitives
import TLSTransport

/// A service account signed by the suite's shared RSA key.
func testAccount(project: String = "herald-test", email: String = "herald@herald-test.iam.gserviceaccount.com",
                 keyID: String = "0123456789abcdef", tokenURI: String = "https://oauth2.googleapis.com/token") -> FCMServiceAccount {
    FCMServiceAccount(projectID: project, clientEmail: email, privateKeyID: keyID, privateKeyPEM: sharedRSAKey.pkcs8PEM, tokenURI: tokenURI)
}

/// The JSON key file of `account`, built with Foundation (independent of the code under test).
func serviceAccountJSON(_ fields: [String: Any]) -> [UInt8] {
    Array(try! JSONSerialization.data(withJSONObject: fields))
}

func accountFields(_ account: FCMServiceAccount = testAccount()) -> [String: Any] {
    [
        "type": "service_account", "project_id": account.projectID, "private_key_id": account.privateKeyID,
        "private_key": account.privateKeyPEM, "client_email": account.clientEmail, "client_id": "1234567890",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": account.tokenURI,
    ]
}

/// Decodes one base64url JWT part into a JSON object (Foundation).
func jwtPart(_ part: Substring) -> [String: Any]? {
    var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while text.count % 4 != 0 { text += "=" }
    guard let data = Data(base64Encoded: text) else { return nil }
    return try? JSONSerialization.jsonObject(with: data) as? [String: Any]
}

func base64URLDecode(_ part: Substring) -> [UInt8]? {
    var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while text.count % 4 != 0 { text += "=" }
    return Data(base64Encoded: text).map(Array.init)
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Every FCM suite, one at a time: the loopback tests, the token-cache tests
/// (manual clocks, held fetches) and the key tests (openssl child processes)
/// intermittently stalled each other when run in parallel on two cores.
@Suite(.serialized) enum FCMTestSuites {}
