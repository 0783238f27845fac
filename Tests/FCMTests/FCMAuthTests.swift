@testable import FCM
import Foundation
import HeraldPrimitives
import Testing
import TLSTransport

extension FCMTestSuites {
    @Suite struct FCMServiceAccountTests {
        @Test func aRealShapedKeyFileParses() throws {
            let account = try FCMServiceAccount.parse(json: serviceAccountJSON(accountFields()))
            #expect(account.projectID == "herald-test")
            #expect(account.clientEmail == "herald@herald-test.iam.gserviceaccount.com")
            #expect(account.privateKeyID == "0123456789abcdef")
            #expect(account.tokenURI == "https://oauth2.googleapis.com/token")
            #expect(account.privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        }

        func failure(_ json: [UInt8]) -> String {
            do {
                _ = try FCMServiceAccount.parse(json: json)
                return "accepted"
            } catch let error as FCMError {
                guard case .invalidServiceAccount(let why) = error else { return "wrong error \(error)" }
                return why
            } catch {
                return "wrong error \(error)"
            }
        }

        @Test func hostileKeyFilesNameTheField() throws {
            for field in ["project_id", "client_email", "private_key_id", "private_key"] {
                var fields = accountFields()
                fields.removeValue(forKey: field)
                #expect(failure(serviceAccountJSON(fields)) == "\(field): missing")
                fields[field] = ""
                #expect(failure(serviceAccountJSON(fields)) == "\(field): empty")
                fields[field] = 42
                #expect(failure(serviceAccountJSON(fields)) == "\(field): not a string")
                fields[field] = ["nested": true]
                #expect(failure(serviceAccountJSON(fields)) == "\(field): not a string")
                fields[field] = "a\u{0}b"
                #expect(failure(serviceAccountJSON(fields)) == "\(field): contains a NUL byte")
            }
            #expect(failure([]) == "the key file is empty")
            #expect(failure(bytes("[1,2]")) == "the key file is not a JSON object")
            #expect(failure(bytes("{\"project_id\":")).hasPrefix("the key file is not JSON"))
            #expect(failure(bytes("<html>")).hasPrefix("the key file is not JSON"))
            #expect(failure([UInt8](repeating: 0x20, count: 70_000)).contains("at most"))
            var fields = accountFields()
            fields["type"] = "authorized_user"
            #expect(failure(serviceAccountJSON(fields)).hasPrefix("type:"))
            fields = accountFields()
            fields["private_key"] = try PrivateKey.generateP256().privateKeyPEM()
            #expect(failure(serviceAccountJSON(fields)) == "private_key: the private key is not an RSA key")
            fields["private_key"] = String(sharedRSAKey.pkcs8PEM.prefix(300))
            #expect(failure(serviceAccountJSON(fields)).hasPrefix("private_key: not a readable PEM RSA private key"))
            fields = accountFields()
            fields["token_uri"] = "http://oauth2.googleapis.com/token"
            #expect(failure(serviceAccountJSON(fields)) == "token_uri: not an https:// URL")
            fields["token_uri"] = "https://host:99999/token"
            #expect(failure(serviceAccountJSON(fields)) == "token_uri: bad port")
            fields = accountFields()
            fields["project_id"] = "../../admin"
            #expect(failure(serviceAccountJSON(fields)).hasPrefix("project_id:"))
            fields["project_id"] = String(repeating: "p", count: 200)
            #expect(failure(serviceAccountJSON(fields)) == "project_id: longer than 128 bytes")
            fields = accountFields()
            fields["client_email"] = "not an email"
            #expect(failure(serviceAccountJSON(fields)) == "client_email: not an e-mail address")
            fields = accountFields()
            fields.removeValue(forKey: "token_uri")
            #expect(try FCMServiceAccount.parse(json: serviceAccountJSON(fields)).tokenURI == FCMServiceAccount.defaultTokenURI)
        }

        @Test func tokenURLsParse() throws {
            #expect(try FCMTokenURL("https://oauth2.googleapis.com/token") == FCMTokenURL(host: "oauth2.googleapis.com", port: 443, path: "/token"))
            #expect(try FCMTokenURL("https://127.0.0.1:8443/token") == FCMTokenURL(host: "127.0.0.1", port: 8443, path: "/token"))
            #expect(try FCMTokenURL("https://[::1]:9/t?x=1") == FCMTokenURL(host: "::1", port: 9, path: "/t?x=1"))
            #expect(try FCMTokenURL("https://h") == FCMTokenURL(host: "h", port: 443, path: "/"))
            for bad in ["", "https://", "https://:1/x", "https://h:0/", "https://h:x/", "https://u@h/", "https://h/a b", "ftp://h/"] {
                #expect(throws: FCMTokenURL.Invalid.self) { try FCMTokenURL(bad) }
            }
        }
    }
}

extension FCMTokenURL {
    init(host: String, port: Int, path: String) {
        try! self.init("https://\(host.contains(":") ? "[\(host)]" : host):\(port)\(path)")
    }
}

extension FCMTestSuites {
    @Suite struct FCMAssertionTests {
        @Test func theJWTHasGooglesClaimsAndAVerifiableSignature() throws {
            let account = testAccount()
            let signer = try FCMAssertionSigner(account: account, audience: account.tokenURI)
            let issuedAt = Timestamp(seconds: 1_700_000_000, nanoseconds: 900_000_000)
            let jwt = try signer.assertion(issuedAt: issuedAt)
            let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
            #expect(parts.count == 3)
            #expect(!jwt.contains("="))
            let header = try #require(jwtPart(parts[0]))
            #expect(header["alg"] as? String == "RS256")
            #expect(header["typ"] as? String == "JWT")
            #expect(header["kid"] as? String == "0123456789abcdef")
            #expect(header.count == 3)
            let claims = try #require(jwtPart(parts[1]))
            #expect(claims["iss"] as? String == account.clientEmail)
            #expect(claims["scope"] as? String == "https://www.googleapis.com/auth/firebase.messaging")
            #expect(claims["aud"] as? String == "https://oauth2.googleapis.com/token")
            #expect(claims["iat"] as? Int == 1_700_000_000)
            #expect(claims["exp"] as? Int == 1_700_003_600)
            #expect(claims.count == 5)
            let signature = try #require(base64URLDecode(parts[2]))
            let publicKey = try RSAPublicKey(pem: sharedRSAKey.publicKeyPEM)
            let signingInput = Array(jwt.utf8.prefix(parts[0].count + 1 + parts[1].count))
            #expect(publicKey.verifyRS256(signature: signature, data: signingInput))
            #expect(!publicKey.verifyRS256(signature: signature, data: signingInput + [0x41]))
        }

        @Test func fieldsWithQuotesAreEscapedNotInjected() throws {
            let account = testAccount(email: #"a"b@c.d"#, keyID: #"k","alg":"none"#)
            let jwt = try FCMAssertionSigner(account: account, audience: "https://h/t").assertion(issuedAt: Timestamp(seconds: 1))
            let parts = jwt.split(separator: ".")
            #expect(try #require(jwtPart(parts[0]))["alg"] as? String == "RS256")
            #expect(try #require(jwtPart(parts[0]))["kid"] as? String == #"k","alg":"none"#)
            #expect(try #require(jwtPart(parts[1]))["iss"] as? String == #"a"b@c.d"#)
        }

        @Test func theTokenRequestIsFormEncoded() throws {
            let signer = try FCMAssertionSigner(account: testAccount(), audience: "https://h/t")
            let body = String(decoding: try signer.tokenRequestBody(issuedAt: Timestamp(seconds: 5)), as: UTF8.self)
            #expect(body.hasPrefix("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=ey"))
            #expect(body.split(separator: "&").count == 2)
        }
    }
}

extension FCMTestSuites {
    @Suite struct FCMTokenResponseTests {
        func parse(_ status: Int, _ body: String, truncated: Bool = false) -> String {
            switch FCMTokenResponse.parse(status: status, body: bytes(body), truncated: truncated) {
            case .success(let answer): "ok \(answer.token) \(answer.expiresIn)"
            case .failure(let failure): "\(failure.retryable ? "retry" : "final"): \(failure.description)"
            }
        }

        @Test func answersAndHostileAnswers() {
            #expect(parse(200, #"{"access_token":"ya29.abc","expires_in":3599,"token_type":"Bearer"}"#) == "ok ya29.abc 3599")
            #expect(parse(200, #"{"access_token":"t","expires_in":3599.7}"#) == "ok t 3599")
            #expect(parse(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)
                == "final: HTTP 400 invalid_grant: Invalid JWT Signature.")
            #expect(parse(401, #"{"error":"invalid_client"}"#) == "final: HTTP 401 invalid_client")
            #expect(parse(503, "<html>busy</html>") == "retry: HTTP 503 without an OAuth error body")
            #expect(parse(200, "") == "final: HTTP 200 with a body that is not a JSON object")
            #expect(parse(200, #"{"access_token":"t","expires_in":3599"#) == "final: HTTP 200 with a body that is not a JSON object")
            #expect(parse(200, #"{"access_token":"t","expires_in":3599}"#, truncated: true) == "final: HTTP 200 with a body that is not a JSON object")
            #expect(parse(200, #"{"expires_in":3599}"#) == "final: the answer has no usable access_token")
            #expect(parse(200, #"{"access_token":"","expires_in":3599}"#) == "final: the answer has no usable access_token")
            #expect(parse(200, #"{"access_token":"a b","expires_in":3599}"#) == "final: the answer has no usable access_token")
            #expect(parse(200, #"{"access_token":"a\r\nx: y","expires_in":3599}"#) == "final: the answer has no usable access_token")
            #expect(parse(200, #"{"access_token":7,"expires_in":3599}"#) == "final: the answer has no usable access_token")
            #expect(parse(200, #"{"access_token":"t"}"#) == "final: the answer has no usable expires_in")
            #expect(parse(200, #"{"access_token":"t","expires_in":"3599"}"#) == "final: the answer has no usable expires_in")
            #expect(parse(200, #"{"access_token":"t","expires_in":0}"#) == "final: the answer has no usable expires_in")
            #expect(parse(200, #"{"access_token":"t","expires_in":-5}"#) == "final: the answer has no usable expires_in")
            #expect(parse(200, #"{"access_token":"t","expires_in":1e300}"#) == "final: the answer has no usable expires_in")
            #expect(parse(200, #"{"access_token":"t","expires_in":60,"token_type":"MAC"}"#) == "final: token_type is not Bearer")
            #expect(parse(200, #"{"access_token":"\#(String(repeating: "x", count: 5000))","expires_in":60}"#)
                == "final: the answer has no usable access_token")
        }
    }
}
