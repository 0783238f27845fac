import FCMSimulation
import Foundation
import HeraldPrimitives
import Testing

@Suite("FCM simulator: messages:send validates like FCM", .timeLimit(.minutes(1)))
struct SendValidationTests {
    struct Case: Sendable, CustomStringConvertible {
        let name: String
        let body: String
        /// Text the error message must contain (the field it names).
        let names: String
        var description: String { name }
    }

    static let invalid: [Case] = [
        Case(name: "not JSON", body: #"{"message":"#, names: "Invalid JSON payload"),
        Case(name: "array body", body: "[1]", names: "JSON object"),
        Case(name: "unknown top-level field", body: #"{"message":{"token":"\#(validToken)"},"extra":1}"#, names: "\"extra\""),
        Case(name: "no message", body: #"{"validate_only":false}"#, names: "'message'"),
        Case(name: "message not an object", body: #"{"message":"hi"}"#, names: "'message'"),
        Case(name: "unknown message field", body: message(#""priority":"HIGH""#), names: "\"priority\" at 'message'"),
        Case(name: "no target", body: #"{"message":{"notification":{"title":"Hi"}}}"#, names: "message.token"),
        Case(name: "two targets", body: message(#""topic":"news""#), names: "exactly one of token, topic, condition"),
        Case(name: "token not a string", body: #"{"message":{"token":7}}"#, names: "message.token"),
        Case(name: "malformed token characters", body: message(token: "abc def/ghijklmnop"), names: "message.token"),
        Case(name: "malformed token empty", body: message(token: ""), names: "message.token"),
        Case(name: "malformed token too long", body: message(token: String(repeating: "a", count: 4097)), names: "message.token"),
        Case(name: "bad topic", body: #"{"message":{"topic":"no spaces allowed"}}"#, names: "message.topic"),
        Case(name: "empty condition", body: #"{"message":{"condition":""}}"#, names: "message.condition"),
        Case(name: "data number", body: message(#""data":{"count":1}"#), names: "message.data[count].value"),
        Case(name: "data null", body: message(#""data":{"count":null}"#), names: "message.data[count].value"),
        Case(name: "data nested", body: message(#""data":{"a":{"b":"c"}}"#), names: "message.data[a].value"),
        Case(name: "data not an object", body: message(#""data":["a"]"#), names: "message.data"),
        Case(name: "reserved from", body: message(#""data":{"from":"x"}"#), names: "\"from\""),
        Case(name: "reserved gcm", body: message(#""data":{"gcm":"x"}"#), names: "\"gcm\""),
        Case(name: "reserved gcm.", body: message(#""data":{"gcm.notification.e":"1"}"#), names: "\"gcm.notification.e\""),
        Case(name: "reserved google", body: message(#""data":{"google.c.a.e":"1"}"#), names: "\"google.c.a.e\""),
        Case(name: "reserved message_type", body: message(#""data":{"message_type":"x"}"#), names: "\"message_type\""),
        Case(name: "reserved collapse_key", body: message(#""data":{"collapse_key":"x"}"#), names: "\"collapse_key\""),
        Case(name: "reserved in android.data", body: message(#""android":{"data":{"from":"x"}}"#), names: "message.android.data"),
        Case(name: "notification title number", body: message(#""notification":{"title":5}"#), names: "message.notification.title"),
        Case(name: "notification unknown field", body: message(#""notification":{"sound":"x"}"#), names: "'message.notification'"),
        Case(name: "notification not object", body: message(#""notification":"hi""#), names: "message.notification"),
        Case(name: "android not object", body: message(#""android":true"#), names: "message.android"),
        Case(name: "android unknown field", body: message(#""android":{"urgency":"x"}"#), names: "'message.android'"),
        Case(name: "priority URGENT", body: message(#""android":{"priority":"URGENT"}"#), names: "message.android.priority"),
        Case(name: "priority lowercase", body: message(#""android":{"priority":"high"}"#), names: "message.android.priority"),
        Case(name: "priority number", body: message(#""android":{"priority":2}"#), names: "message.android.priority"),
        Case(name: "ttl without s", body: message(#""android":{"ttl":"3600"}"#), names: "message.android.ttl"),
        Case(name: "ttl hours", body: message(#""android":{"ttl":"1h"}"#), names: "message.android.ttl"),
        Case(name: "ttl negative", body: message(#""android":{"ttl":"-1s"}"#), names: "message.android.ttl"),
        Case(name: "ttl ten decimals", body: message(#""android":{"ttl":"1.0123456789s"}"#), names: "message.android.ttl"),
        Case(name: "ttl dot only", body: message(#""android":{"ttl":"1.s"}"#), names: "message.android.ttl"),
        Case(name: "ttl number", body: message(#""android":{"ttl":3600}"#), names: "message.android.ttl"),
        Case(name: "ttl over four weeks", body: message(#""android":{"ttl":"2419201s"}"#), names: "message.android.ttl"),
        Case(name: "ttl just over four weeks", body: message(#""android":{"ttl":"2419200.000000001s"}"#), names: "message.android.ttl"),
        Case(name: "ttl enormous", body: message(#""android":{"ttl":"99999999999999999999999s"}"#), names: "message.android.ttl"),
        Case(name: "collapse_key number", body: message(#""android":{"collapse_key":1}"#), names: "message.android.collapse_key"),
        Case(name: "apns not object", body: message(#""apns":1"#), names: "message.apns"),
        Case(name: "too big", body: message(#""data":{"blob":"\#(String(repeating: "x", count: 4100))"}"#), names: "too big"),
    ]

    @Test("Invalid messages get 400 INVALID_ARGUMENT naming the field", arguments: invalid)
    func invalidMessage(_ testCase: Case) async throws {
        let harness = try await Harness.start()
        let token = try await harness.accessToken()
        let response = try await harness.send(testCase.body, token: token)
        #expect(response.status == 400, "\(response.text)")
        let error = googleError(response)
        #expect(error.status == "INVALID_ARGUMENT")
        #expect(error.errorCode == "INVALID_ARGUMENT")
        #expect(error.message.contains(testCase.names), "\(error.message)")
        #expect(json(response)?["error"]?.objectValue?["code"]?.numberValue == 400)
        #expect(harness.simulator.acceptedCount == 0)
        #expect(try await harness.send(message(), token: token).status == 200)
        await harness.stop()
    }

    @Test("Bodies over 64 KiB are refused whole; the connection stays usable")
    func hugeBody() async throws {
        let harness = try await Harness.start()
        let token = try await harness.accessToken()
        let huge = message(#""data":{"blob":"\#(String(repeating: "x", count: 100_000))"}"#)
        let response = try await harness.send(huge, token: token)
        #expect(response.status == 400)
        #expect(googleError(response).status == "INVALID_ARGUMENT")
        #expect(try await harness.send(message(), token: token).status == 200)
        await harness.stop()
    }

    @Test("Valid messages are accepted as received and recorded")
    func accepted() async throws {
        let directory = NSTemporaryDirectory() + "fcm-sim-record-\(UUIDv4.make())"
        try POSIXFile.createDirectories(directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let recordPath = directory + "/record.jsonl"
        let harness = try await Harness.start { $0.recordTo = recordPath }
        let token = try await harness.accessToken()
        let biggest = 4096 - #"{"data":{"b":""}}"#.utf8.count
        let bodies = [
            message(),
            message(#""data":{"b":"\#(String(repeating: "y", count: biggest))"}"#),
            message(#" "android" : {"priority":"HIGH","ttl":"2419200s","collapse_key":"c","notification":{"channel_id":"x","notification_count":2}},"data":{"googlish":"no","fromage":"ok"}"#),
            message(#""android":{"priority":"NORMAL","ttl":"0.5s"},"name":"ignored","fcm_options":{"analytics_label":"l"}"#),
            #"{"message":{"topic":"/topics/news","data":{"k":"v"}}}"#,
            #"{"message":{"condition":"'a' in topics && 'b' in topics"}}"#,
        ]
        for body in bodies {
            let response = try await harness.send(body, token: token)
            #expect(response.status == 200, "\(response.text)")
            let name = try #require(json(response)?["name"]?.stringValue)
            #expect(name.hasPrefix("projects/\(TestAccount.project)/messages/"))
        }
        let accepted = harness.simulator.accepted()
        #expect(accepted.count == bodies.count)
        #expect(accepted[0].token == validToken)
        #expect(accepted[0].message == Array(#"{"token":"\#(validToken)","notification":{"title":"Hi","body":"There"}}"#.utf8))
        #expect(String(decoding: accepted[2].message, as: UTF8.self).contains(#" "android" : {"priority":"HIGH""#))
        #expect(accepted[4].topic == "news")
        #expect(accepted[4].token == "")
        #expect(accepted[5].condition == "'a' in topics && 'b' in topics")

        // validate_only answers without delivering.
        let dry = try await harness.send(#"{"validate_only":true,"message":{"token":"\#(validToken)"}}"#, token: token)
        #expect(dry.status == 200)
        #expect(harness.simulator.acceptedCount == bodies.count)

        await harness.stop()
        let lines = try POSIXFile.readText(recordPath).split(separator: "\n")
        #expect(lines.count == bodies.count)
        let first = try #require(try JSONParser.parse(String(lines[0])).objectValue)
        #expect(first["service"]?.stringValue == "fcm")
        #expect(first["project"]?.stringValue == TestAccount.project)
        #expect(first["token"]?.stringValue == validToken)
        #expect(first["message"]?.objectValue?["notification"]?.objectValue?["title"]?.stringValue == "Hi")
        let topic = try #require(try JSONParser.parse(String(lines[4])).objectValue)
        #expect(topic["topic"]?.stringValue == "news")
    }

    @Test("Bearer tokens: missing, unknown, malformed and expired get 401; another project's 403")
    func authentication() async throws {
        let harness = try await Harness.start { $0.accessTokenLifetime = .seconds(600) }
        let token = try await harness.accessToken()
        // (An empty token would end the header in a space: nghttp2 resets such streams itself.)
        for candidate in [nil, "nope", "ya29.sim-unknown"] as [String?] {
            let response = try await harness.send(message(), token: candidate)
            #expect(response.status == 401)
            #expect(googleError(response).status == "UNAUTHENTICATED")
        }
        let basic = try await harness.client.request(
            path: "/v1/projects/\(TestAccount.project)/messages:send", headers: [("authorization", "Basic \(token)")],
            body: Array(message().utf8))
        #expect(basic.status == 401)
        let bare = try await harness.client.request(
            path: "/v1/projects/\(TestAccount.project)/messages:send", headers: [("authorization", "Bearer")],
            body: Array(message().utf8))
        #expect(bare.status == 401)

        let wrongProject = try await harness.send(message(), token: token, project: "other-project")
        #expect(wrongProject.status == 403)
        #expect(googleError(wrongProject).status == "PERMISSION_DENIED")
        let otherToken = try await harness.accessToken(other: true)
        #expect(try await harness.send(message(), token: otherToken, project: "other-project").status == 200)

        harness.clock.advance(seconds: 599)
        #expect(try await harness.send(message(), token: token).status == 200)
        harness.clock.advance(seconds: 1)
        let expired = try await harness.send(message(), token: token)
        #expect(expired.status == 401)
        #expect(googleError(expired).status == "UNAUTHENTICATED")
        // A fresh token works again.
        #expect(try await harness.send(message(), token: try await harness.accessToken()).status == 200)
        await harness.stop()
    }

    @Test("Paths and methods: unknown paths 404, GET 405")
    func paths() async throws {
        let harness = try await Harness.start()
        let token = try await harness.accessToken()
        for path in ["/", "/v1/projects//messages:send", "/v1/projects/a/b/messages:send", "/v1/projects/x/messages:sendx", "/v2/x"] {
            let response = try await harness.client.request(path: path, headers: [("authorization", "Bearer \(token)")])
            #expect(response.status == 404, "\(path)")
        }
        let get = try await harness.client.request("GET", path: "/v1/projects/\(TestAccount.project)/messages:send")
        #expect(get.status == 405)
        await harness.stop()
    }

    @Test("The token registry: unregistered 404, other sender 403, per project; well-formed unknown tokens valid")
    func registry() async throws {
        let harness = try await Harness.start()
        let token = try await harness.accessToken()
        let gone = "gone_token:" + String(repeating: "g", count: 40)
        let foreign = "foreign-token:" + String(repeating: "f", count: 40)
        harness.simulator.setToken(gone, project: TestAccount.project, state: .unregistered)
        harness.simulator.setToken(foreign, project: TestAccount.project, state: .otherSender)

        let unregistered = try await harness.send(message(token: gone), token: token)
        #expect(unregistered.status == 404)
        #expect(googleError(unregistered).status == "NOT_FOUND")
        #expect(googleError(unregistered).errorCode == "UNREGISTERED")

        let mismatch = try await harness.send(message(token: foreign), token: token)
        #expect(mismatch.status == 403)
        #expect(googleError(mismatch).status == "PERMISSION_DENIED")
        #expect(googleError(mismatch).errorCode == "SENDER_ID_MISMATCH")

        // Another project knows nothing of these states.
        let other = try await harness.accessToken(other: true)
        #expect(try await harness.send(message(token: gone), token: other, project: "other-project").status == 200)

        harness.simulator.setToken(gone, project: TestAccount.project, state: .valid)
        #expect(try await harness.send(message(token: gone), token: token).status == 200)
        #expect(harness.simulator.acceptedCount == 2)
        await harness.stop()
    }
}
