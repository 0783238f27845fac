import APNsProvider
import FCMProvider
import APNs
import Testing

@testable import HeraldService

@Suite("APNs route specs")
struct APNsRouteSpecTests {
    @Test func tokenRouteWithDefaults() throws {
        let spec = try APNsRouteSpec.parse("team=ABCDE12345 key-id=KEY1234567 key=/k.p8", source: "test")
        #expect(spec.auth == .token(teamID: "ABCDE12345", keyID: "KEY1234567", keyPath: "/k.p8"))
        #expect(spec.bundleIDs == ["*"])
        #expect(spec.environment == .production)
        #expect(spec.endpoint == nil)
    }

    @Test func certificateRouteWithEverything() throws {
        let spec = try APNsRouteSpec.parse(
            "cert=/c.pem cert-key=/c.key bundles=com.a,com.b env=both endpoint=127.0.0.1:2197 ca=/ca.pem", source: "test")
        #expect(spec.auth == .certificate(certificatePath: "/c.pem", keyPath: "/c.key"))
        #expect(spec.bundleIDs == ["com.a", "com.b"])
        #expect(spec.environment == nil)
        #expect(spec.endpoint == APNsEndpoint(host: "127.0.0.1", port: 2197))
        #expect(spec.caFile == "/ca.pem")
    }

    @Test("bad routes say what is wrong", arguments: [
        ("team=T key-id=K", "either team, key-id and key"),
        ("team=T key-id=K key=/k cert=/c cert-key=/d", "either team"),
        ("team=T key-id=K key=/k env=staging", "env must be"),
        ("team=T key-id=K key=/k endpoint=nohost", "endpoint must be host:port"),
        ("team=T key-id=K key=/k endpoint=h:99999", "endpoint must be host:port"),
        ("team=T key-id=K key=/k colour=blue", "unknown key \"colour\""),
        ("team=T team=U key-id=K key=/k", "given twice"),
        ("team=T key-id=K key", "is not key=value"),
    ])
    func badRoutes(text: String, reason: String) {
        #expect {
            _ = try APNsRouteSpec.parse(text, source: "routes:3")
        } throws: { error in
            "\(error)".contains(reason) && "\(error)".hasPrefix("routes:3")
        }
    }

    @Test func missingKeyFileIsAClearError() throws {
        let spec = try APNsRouteSpec.parse("team=T key-id=K key=/nonexistent/AuthKey.p8", source: "test")
        #expect {
            _ = try APNsRouteSpec.makeRoutes([spec])
        } throws: { error in
            "\(error)".contains("/nonexistent/AuthKey.p8")
        }
    }
}
