import Foundation
import GRPCEngine
import HeraldCore
import HeraldPrimitives
import HeraldProtos
import Testing

@testable import HeraldService

/// The ContextPush JSON bodies → the protobuf requests the Schedule and
/// Cancel handlers take, read back through the handlers' own decoder.
@Suite("ContextPush web API mapping", .timeLimit(.minutes(1)))
struct ContextPushMappingTests {
    /// `Tests/interop/contextpush/NAME`: the body after the blank line.
    static func exampleBody(_ name: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../interop/contextpush/\(name)")
        let text = try String(contentsOf: url, encoding: .utf8)
        let parts = text.components(separatedBy: "\n\n")
        return Array(parts.dropFirst().joined(separator: "\n\n").utf8)
    }

    /// What the Schedule handler's decoder reads from `bytes`.
    static func scheduleInput(_ bytes: [UInt8]) throws -> ScheduleInput {
        try ProtobufC.withUnpacked(Herald__V1__ScheduleRequest.self, from: bytes) { wire in
            var decoder = RequestDecoder()
            let input = decoder.scheduleInput(wire)
            try decoder.finish()
            return input
        }
    }

    @Test("the plain example: title and body as text, deliver_within_hours, context_aware")
    func plainExample() throws {
        let input = try Self.scheduleInput(ContextPushRequest.schedule(Self.exampleBody("schedule-plain.http")))
        let expected = ScheduleInput(
            message: MessageInput(
                bundleID: "com.contextsdk.demo", platform: .ios,
                content: NotificationContent(
                    title: .text("James, it's time for your english course!"), body: .text("Start your english course now!"))),
            userID: "user@contextsdk.com", campaignID: "daily-reminder", deliveryMethod: .contextAware, deliverWithinHours: 3)
        #expect(input == expected)
    }

    @Test("the translated example: title and body as translations with default_locale")
    func translatedExample() throws {
        let input = try Self.scheduleInput(ContextPushRequest.schedule(Self.exampleBody("schedule-translated.http")))
        let expected = ScheduleInput(
            message: MessageInput(
                bundleID: "com.contextsdk.demo", platform: .ios,
                content: NotificationContent(
                    title: .translations(SortedMap([
                        "en": "James, it's time for your english course!", "de": "James, es ist Zeit für deinen Englischkurs!",
                    ])),
                    body: .translations(SortedMap([
                        "en": "Start your english course now!", "de": "Beginne jetzt mit deinem Englischkurs!",
                    ])),
                    defaultLocale: "en")),
            userID: "user@contextsdk.com", campaignID: "daily-reminder", deliveryMethod: .contextAware, deliverWithinHours: 3)
        #expect(input == expected)
    }

    @Test("every other documented field: target_delivery_time, key, traditional, subtitle, sound, badge, userInfo, thread-id, imageUrl")
    func everyFieldExample() throws {
        let input = try Self.scheduleInput(ContextPushRequest.schedule(Self.exampleBody("schedule-every-field.http")))
        let expected = ScheduleInput(
            message: MessageInput(
                bundleID: "com.contextsdk.demo", platform: .ios,
                content: NotificationContent(
                    title: .text("James, It's time to learn English"), subtitle: .text("Start your English course now!"),
                    body: .text("It's time to learn English. Start your course now!"), sound: "sosumi.caf", badge: 1,
                    userInfo: JSONObject([("key", .string("value"))]), threadID: "english-course",
                    imageURL: "https://push.contextsdk.com/image.jpg"),
                idempotencyKey: "1234567890abcdef"),
            userID: "user@contextsdk.com", campaignID: "daily-reminder", deliveryMethod: .traditional,
            targetDeliveryTime: "2099-01-25T18:32:00Z")
        #expect(input == expected)
    }

    @Test("the cancel example: every field, platform ios")
    func cancelExample() throws {
        let bytes = try ContextPushRequest.cancel(Self.exampleBody("cancel.http"))
        let fields = try #require(ProtoFields(bytes))
        #expect(fields.string(1) == "com.contextsdk.demo")
        #expect(fields.int(2) == Int(HERALD__V1__PLATFORM__PLATFORM_IOS.rawValue))
        #expect(fields.string(3) == "user@contextsdk.com")
        #expect(fields.string(4) == "daily-reminder")
        #expect(fields.string(5) == "427c60db-c3df-4098-a0f7-9b5d153438f4")
        // protobuf-c reads it as the Cancel handler does.
        let key = try ProtobufC.withUnpacked(Herald__V1__CancelRequest.self, from: bytes) { String(cString: $0.idempotency_key) }
        #expect(key == "427c60db-c3df-4098-a0f7-9b5d153438f4")
    }

    @Test("userInfo keeps every JSON type (null, bool, number, string, list, object)")
    func userInfoTypes() throws {
        let body = #"{"bundle_id":"a.b","platform":"android","user_id":"u","campaign_id":"c","deliver_within_hours":1,"#
            + #""content":{"title":"t","body":"b","userInfo":{"n":null,"t":true,"x":1.5,"s":"v","l":[1,"a"],"o":{"k":false}}}}"#
        let input = try Self.scheduleInput(ContextPushRequest.schedule(Array(body.utf8)))
        #expect(input.message.platform == .android)
        #expect(input.message.content?.userInfo == JSONObject([
            ("n", .null), ("t", .bool(true)), ("x", .number(1.5)), ("s", .string("v")),
            ("l", .array([.number(1), .string("a")])), ("o", .object(JSONObject([("k", .bool(false))]))),
        ]))
    }

    // MARK: - Hostile bodies: each an INVALID_ARGUMENT naming what is wrong

    func refusal(_ body: String) -> WebAPIError? {
        refusal(Array(body.utf8))
    }

    func refusal(_ body: [UInt8]) -> WebAPIError? {
        do {
            _ = try ContextPushRequest.schedule(body)
            return nil
        } catch {
            return error
        }
    }

    @Test("unknown fields are errors naming them, at the top and inside content")
    func unknownFields() {
        let top = refusal(#"{"bundle_id":"a.b","platform":"ios","deliver_within_hour":3}"#)
        #expect(top?.code == .invalidArgument)
        #expect(top?.field == "deliver_within_hour")
        #expect(top?.status == 400)
        let inner = refusal(#"{"content":{"title":"t","thread_id":"x"}}"#)
        #expect(inner?.field == "content.thread_id")
        #expect(inner?.message.contains("unknown field") == true)
    }

    @Test("duplicate keys are refused (two readers must not disagree)")
    func duplicateKeys() {
        #expect(refusal(#"{"user_id":"a","user_id":"b"}"#)?.field == "user_id")
        #expect(refusal(#"{"content":{"title":"a","title":"b"}}"#)?.field == "content.title")
    }

    @Test("NUL characters, raw or escaped, are refused")
    func nulCharacters() {
        #expect(refusal(#"{"user_id":"a\u0000b"}"#)?.message.contains("NUL") == true)
        #expect(refusal(Array(#"{"user_id":"a"#.utf8) + [0] + Array(#"b"}"#.utf8))?.message.contains("NUL") == true)
    }

    @Test("deep nesting, huge strings and too many values are refused with a bound")
    func bounds() {
        let deep = String(repeating: #"{"a":"#, count: 100) + "1" + String(repeating: "}", count: 100)
        let nested = #"{"content":{"title":"t","userInfo":"# + deep + "}}"
        #expect(refusal(nested)?.message.contains("nested deeper") == true)
        let long = #"{"user_id":""# + String(repeating: "x", count: 70_000) + #""}"#
        #expect(refusal(long)?.message.contains("longer than") == true)
        let many = #"{"content":{"userInfo":{"l":["# + Array(repeating: "1", count: 20_000).joined(separator: ",") + "]}}}"
        #expect(refusal(many)?.message.contains("values") == true)
    }

    @Test("truncated bodies, trailing bytes, invalid UTF-8 and bad escapes are refused")
    func malformed() {
        for body in [#"{"user_id":"a""#, #"{"user_id":"a"} x"#, #"{"user_id":"\ud800"}"#, #"{"user_id":"\q"}"#, "", "[]", "nul"] {
            #expect(refusal(body)?.code == .invalidArgument, "\(body)")
        }
        #expect(refusal(Array(#"{"user_id":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8))?.message.contains("UTF-8") == true)
    }

    @Test("wrong types and numbers out of range name the field")
    func types() {
        #expect(refusal(#"{"platform":1}"#)?.field == "platform")
        #expect(refusal(#"{"platform":"IOS"}"#)?.field == "platform")
        #expect(refusal(#"{"delivery_method":"smart"}"#)?.field == "delivery_method")
        #expect(refusal(#"{"deliver_within_hours":"3"}"#)?.field == "deliver_within_hours")
        #expect(refusal(#"{"deliver_within_hours":3.5}"#)?.field == "deliver_within_hours")
        #expect(refusal(#"{"deliver_within_hours":-1}"#)?.field == "deliver_within_hours")
        #expect(refusal(#"{"deliver_within_hours":4294967296}"#)?.field == "deliver_within_hours")
        #expect(refusal(#"{"deliver_within_hours":1e999}"#)?.code == .invalidArgument)
        #expect(refusal(#"{"content":{"badge":2147483648}}"#)?.field == "content.badge")
        #expect(refusal(#"{"content":{"title":["a"]}}"#)?.field == "content.title")
        #expect(refusal(#"{"content":{"title":{"en":1}}}"#)?.field == "content.title.en")
        #expect(refusal(#"{"content":{"userInfo":[1]}}"#)?.field == "content.userInfo")
        #expect(refusal(#"{"content":"hi"}"#)?.field == "content")
    }

    @Test("the handlers' errors name the field in the web API's spelling, with the matching HTTP status")
    func handlerErrors() {
        let invalid = WebAPIError(GRPCStatus(.invalidArgument, "content.user_info: must not contain \"aps\"; content.title.text: is required"))
        #expect(invalid.field == "content.userInfo")
        #expect(invalid.message.hasPrefix("content.userInfo: must not"))
        #expect(invalid.message.contains("content.title: is required"))
        #expect(invalid.status == 400)
        for (code, status) in [
            (GRPCStatus.Code.unauthenticated, 401), (.permissionDenied, 403), (.notFound, 404), (.alreadyExists, 409),
            (.aborted, 409), (.resourceExhausted, 429), (.unavailable, 503),
        ] {
            #expect(WebAPIError(GRPCStatus(code, "x")).status == status)
        }
        let body = String(decoding: invalid.body, as: UTF8.self)
        #expect(body.hasPrefix(#"{"error":{"code":"INVALID_ARGUMENT","field":"content.userInfo","message":"#))
    }
}
