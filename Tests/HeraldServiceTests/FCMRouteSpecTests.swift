import APNsProvider
import FCMProvider
import FCM
import HeraldCore
import HeraldPrimitives
import HeraldTestSupport
import Testing
import TLSTransport

@testable import HeraldService

@Suite("FCM route specs, coverage and tokens")
struct FCMRouteSpecTests {
    // Hostile first.

    @Test("bad routes say what is wrong and where", arguments: [
        ("key=/sa.json bundles=com.a", "project=ID is required"),
        ("project=p bundles=com.a", "key=service-account.json is required"),
        ("project=p key=/sa.json endpoint=nohost", "endpoint must be host:port"),
        ("project=p key=/sa.json endpoint=h:0", "endpoint must be host:port"),
        ("project=p key=/sa.json endpoint=:443", "endpoint must be host:port"),
        ("project=p key=/sa.json token-url=http://plain/token", "token-url must be an https:// URL"),
        ("project=p key=/sa.json token-url=https://", "token-url must be an https:// URL"),
        ("project=p key=/sa.json team=T", "unknown key \"team\""),
        ("project=p project=q key=/sa.json", "given twice"),
        ("project=p key", "is not key=value"),
        ("project=p key=", "is not key=value"),
        ("project=a/b key=/sa.json", "project must be a Firebase project id"),
        ("project=p key=/sa.json bundles=,", "bundles must name at least one package"),
    ])
    func badRoutes(text: String, reason: String) {
        #expect {
            _ = try FCMRouteSpec.parse(text, source: "fcm-routes:3")
        } throws: { error in
            "\(error)".contains(reason) && "\(error)".hasPrefix("fcm-routes:3")
        }
    }

    @Test func aHugeRouteLineIsRefusedNotCrashedOn() {
        let huge = "project=" + String(repeating: "p", count: 100_000) + " key=/sa.json"
        #expect(throws: FCMRouteSpec.ParseError.self) { _ = try FCMRouteSpec.parse(huge, source: "flag") }
    }

    @Test("unusable service-account keys stop start-up naming the route", arguments: [
        ("", "not usable"),
        ("{", "not usable"),
        (#"{"project_id":"p","client_email":"a@b","private_key_id":"k","private_key":"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n","token_uri":"https://t/token"}"#, "not usable"),
        (#"{"project_id":"p"}"#, "not usable"),
    ])
    func badServiceAccountKeys(json: String, reason: String) throws {
        let directory = try makeTemporaryDirectory(prefix: "herald-fcm-route")
        defer { removeTemporaryDirectory(directory) }
        try POSIXFile.writeAtomically("\(directory)/sa.json", bytes: Array(json.utf8))
        let spec = try FCMRouteSpec.parse("project=my-proj key=\(directory)/sa.json bundles=com.a", source: "--fcm-route #2")
        #expect {
            _ = try FCMRouteSpec.makeRoutes([spec], ratePerMinute: 600_000)
        } throws: { error in
            "\(error)".contains(reason) && "\(error)".contains("--fcm-route #2") && "\(error)".contains("project=my-proj")
        }
    }

    @Test func aMissingKeyFileIsAClearError() throws {
        let spec = try FCMRouteSpec.parse("project=p key=/nonexistent/sa.json", source: "test")
        #expect {
            _ = try FCMRouteSpec.makeRoutes([spec], ratePerMinute: 600_000)
        } throws: { error in
            "\(error)".contains("/nonexistent/sa.json") && "\(error)".contains("project=p")
        }
    }

    // The routes that work.

    @Test func aRouteWithEverything() throws {
        let spec = try FCMRouteSpec.parse(
            "project=my-proj key=/sa.json bundles=com.a,com.b endpoint=127.0.0.1:8443 token-url=https://127.0.0.1:8443/token ca=/ca.pem",
            source: "test")
        #expect(spec.projectID == "my-proj")
        #expect(spec.keyPath == "/sa.json")
        #expect(spec.bundleIDs == ["com.a", "com.b"])
        #expect(spec.endpoint == FCMEndpoint(host: "127.0.0.1", port: 8443))
        #expect(spec.tokenURL == "https://127.0.0.1:8443/token")
        #expect(spec.caFile == "/ca.pem")
        let defaults = try FCMRouteSpec.parse("project=p key=/sa.json", source: "test")
        #expect(defaults.bundleIDs == ["*"] && defaults.endpoint == nil && defaults.tokenURL == nil)
    }

    @Test func routesShareAClientPerProjectAndKeyAndAReloadKeepsUnchangedOnes() throws {
        let directory = try makeTemporaryDirectory(prefix: "herald-fcm-route")
        defer { removeTemporaryDirectory(directory) }
        for name in ["a", "b"] {
            let key = try RSAPrivateKey.generate()
            let json = #"{"type":"service_account","project_id":"proj-\#(name)","private_key_id":"k\#(name)","#
                + #""private_key":"\#(key.pkcs8PEM.replacingNewlines())","client_email":"sa@proj-\#(name).iam.gserviceaccount.com","#
                + #""token_uri":"https://oauth2.googleapis.com/token"}"#
            try POSIXFile.writeAtomically("\(directory)/\(name).json", bytes: Array(json.utf8))
        }
        let specs = try [
            "project=proj-a key=\(directory)/a.json bundles=com.a",
            "project=proj-a key=\(directory)/a.json bundles=com.a2",
            "project=proj-b key=\(directory)/b.json bundles=com.b",
        ].map { try FCMRouteSpec.parse($0, source: "test") }
        let routes = try FCMRouteSpec.makeRoutes(specs, ratePerMinute: 1000)
        #expect(routes.count == 3)
        #expect(routes[0].client === routes[1].client)
        #expect(routes[0].client !== routes[2].client)
        let gateway = FCMGateway(routes: routes)
        #expect(gateway.route(bundleID: "com.b")?.projectID == "proj-b")
        #expect(gateway.route(bundleID: "com.c") == nil)
        #expect(gateway.serves(bundleID: "com.a2") && !gateway.serves(bundleID: "com.c"))

        // A reload: b changes (another rate would too), a stays.
        let reloaded = try FCMRouteSpec.makeRoutes(
            [specs[0], try FCMRouteSpec.parse("project=proj-b key=\(directory)/b.json bundles=com.b,com.c", source: "test")],
            ratePerMinute: 1000, reusing: routes)
        #expect(reloaded[0].client === routes[0].client)
        #expect(reloaded[1].client === routes[2].client)  // same project, key, endpoint: same client
        let retired = gateway.replaceRoutes(reloaded)
        #expect(retired.isEmpty)
        #expect(gateway.serves(bundleID: "com.c"))
        let other = try FCMRouteSpec.makeRoutes([specs[0]], ratePerMinute: 2000, reusing: reloaded)
        #expect(other[0].client !== routes[0].client)
        #expect(gateway.replaceRoutes(other).count == 2)
    }

    @Test func coverageRefusesAndroidOnlyWithoutAnFCMRoute() {
        let coverage = DeliveryCoverage(apnsEnvironments: { _ in [] }, fcmRouted: { $0 == "com.routed" })
        #expect(coverage.missing(bundleID: "com.routed", platform: .android) == nil)
        let why = coverage.missing(bundleID: "com.other", platform: .android)
        #expect(why?.contains("PLATFORM_ANDROID") == true && why?.contains("no FCM route") == true)
        #expect(why?.contains("--fcm-route") == true)
        #expect(coverage.missing(bundleID: "com.routed", platform: .ios) != nil)
    }

    @Test("Android registration tokens: opaque, not hex", arguments: [
        ("", false), ("has space", false), ("slash/no", false), ("dot.no", false), ("ümlaut", false),
        (String(repeating: "a", count: 4097), false), ("\u{0}", false),
        ("a", true), ("fGx3:APA91bH-ab_CD", true), (String(repeating: "Z", count: 4096), true),
    ])
    func androidTokens(token: String, valid: Bool) {
        #expect((Validator.deviceTokenProblem(token, platform: .android) == nil) == valid)
    }
}

extension String {
    /// JSON-escaped newlines (for a PEM inside a JSON string).
    func replacingNewlines() -> String {
        split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\\n")
    }
}
