import FCMSimulation
import HeraldPrimitives
import Testing

@Suite("FCM simulator: OAuth2 token endpoint", .timeLimit(.minutes(1)))
struct TokenEndpointTests {
    struct Case: Sendable, CustomStringConvertible {
        let name: String
        let change: @Sendable (inout Assertion) -> Void
        var description: String { name }
    }

    static let refused: [Case] = [
        Case(name: "signed by another key") { $0.key = TestAccount.otherKey },
        Case(name: "unknown kid") { $0.kid = "not-the-kid" },
        Case(name: "other account's kid with this iss") { $0.kid = "kid-other" },
        Case(name: "unknown iss") { $0.iss = "someone@else.iam.gserviceaccount.com" },
        Case(name: "alg HS256") { $0.alg = "HS256" },
        Case(name: "aud another host") { $0.aud = "https://oauth2.googleapis.com/token" },
        Case(name: "aud another port") { $0.aud = "https://127.0.0.1:1/token" },
        Case(name: "aud another path") { $0.aud = $0.aud.replacingSuffix("/token", with: "/token2") },
        Case(name: "scope missing") { $0.scope = "https://www.googleapis.com/auth/cloud-platform" },
        Case(name: "scope a prefix") { $0.scope = "https://www.googleapis.com/auth/firebase" },
        Case(name: "iat in the future") { $0.iat += 61; $0.exp += 61 },
        Case(name: "exp - iat over an hour") { $0.exp = $0.iat + 3601 },
        Case(name: "exp before iat") { $0.exp = $0.iat - 1 },
        Case(name: "expired") { $0.iat -= 7200; $0.exp -= 7200 },
    ]

    @Test("Assertions that break a rule get 400 invalid_grant", arguments: refused)
    func invalidGrant(_ testCase: Case) async throws {
        let harness = try await Harness.start()
        var assertion = harness.assertion()
        testCase.change(&assertion)
        let response = try await harness.requestToken(assertion)
        #expect(response.status == 400)
        #expect(json(response)?["error"]?.stringValue == "invalid_grant")
        #expect(json(response)?["error_description"]?.stringValue?.isEmpty == false)
        #expect(harness.simulator.accessTokensMinted == 0)
        // The connection stays usable.
        #expect(try await harness.requestToken(harness.assertion()).status == 200)
        await harness.stop()
    }

    @Test("Hostile form bodies are refused, never crash")
    func hostileForms() async throws {
        let harness = try await Harness.start()
        let jwt = try harness.assertion().jwt()
        let bodies: [(String, [UInt8], String)] = [
            ("huge", Array(repeating: UInt8(ascii: "a"), count: 70_000), "invalid_request"),
            ("empty", [], "invalid_request"),
            ("bad escape", Array("grant_type=%zz&assertion=x".utf8), "invalid_request"),
            ("truncated escape", Array("grant_type=urn%3".utf8), "invalid_request"),
            ("not UTF-8", Array("grant_type=%FF%FE".utf8), "invalid_request"),
            ("no grant_type", Array("assertion=\(jwt)".utf8), "invalid_request"),
            ("other grant", Array("grant_type=client_credentials&assertion=\(jwt)".utf8), "unsupported_grant_type"),
            ("no assertion", Array("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer".utf8), "invalid_request"),
            ("two parts", Array("grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=a.b".utf8), "invalid_grant"),
            ("garbage", Array("grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=!!.??.**".utf8), "invalid_grant"),
            ("huge JWT", Array(("grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion="
                + String(repeating: "A", count: 5000) + ".e30.AA").utf8), "invalid_grant"),
            ("JSON not object", Array(("grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion="
                + Base64.encode(Array("[1]".utf8), url: true) + ".e30.AA").utf8), "invalid_grant"),
        ]
        for (name, body, error) in bodies {
            let response = try await harness.client.request(path: "/token", body: body)
            #expect(response.status == 400, "\(name)")
            #expect(json(response)?["error"]?.stringValue == error, "\(name): \(response.text)")
        }
        let get = try await harness.client.request("GET", path: "/token")
        #expect(get.status == 405)
        #expect(harness.simulator.accessTokensMinted == 0)
        await harness.stop()
    }

    @Test("A valid assertion gets an access token for its account's project")
    func mints() async throws {
        let harness = try await Harness.start { $0.accessTokenLifetime = .seconds(120) }
        let response = try await harness.requestToken(harness.assertion())
        #expect(response.status == 200)
        #expect(response.header("content-type")?.hasPrefix("application/json") == true)
        let body = try #require(json(response))
        #expect(body["token_type"]?.stringValue == "Bearer")
        #expect(body["expires_in"]?.numberValue == 120)
        let token = try #require(body["access_token"]?.stringValue)
        #expect(!token.isEmpty)
        #expect(try await harness.send(message(), token: token).status == 200)
        #expect(harness.simulator.accessTokensMinted == 1)
        await harness.stop()
    }

    @Test("aud may name localhost; iat up to 60 s ahead and a full hour are accepted")
    func acceptedVariants() async throws {
        let harness = try await Harness.start()
        var localhost = harness.assertion()
        localhost.aud = "https://localhost:\(harness.port)/token"
        #expect(try await harness.requestToken(localhost).status == 200)
        var skewed = harness.assertion()
        skewed.iat += 60
        skewed.exp = skewed.iat + 3600
        #expect(try await harness.requestToken(skewed).status == 200)
        var scopes = harness.assertion()
        scopes.scope = "https://www.googleapis.com/auth/cloud-platform \(scope)"
        #expect(try await harness.requestToken(scopes).status == 200)
        await harness.stop()
    }

    @Test("Injected invalid_grant answers the next token requests, then valid ones are minted again")
    func injectedInvalidGrant() async throws {
        let harness = try await Harness.start()
        harness.simulator.inject(.invalidGrant, count: 2)
        for _ in 0..<2 {
            let refused = try await harness.requestToken(harness.assertion())
            #expect(refused.status == 400)
            #expect(json(refused)?["error"]?.stringValue == "invalid_grant")
        }
        #expect(try await harness.requestToken(harness.assertion()).status == 200)
        // Send faults do not touch the token endpoint.
        harness.simulator.inject(.internalError)
        #expect(try await harness.requestToken(harness.assertion()).status == 200)
        await harness.stop()
    }
}

extension String {
    func replacingSuffix(_ suffix: String, with replacement: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) + replacement : self
    }
}
