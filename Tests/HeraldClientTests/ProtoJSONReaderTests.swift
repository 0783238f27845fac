import CInterop
import HeraldPrimitives
import HeraldProtos
import Testing

@testable import HeraldClient

/// The proto3 JSON mapping, JSON → message and back, through the protoc-c
/// descriptors: hostile bodies first, each refused with the field named.
@Suite struct ProtoJSONReaderTests {
    private func pack(_ type: ProtoMessage.MessageType, _ json: String) throws(ProtoJSONError) -> [UInt8] {
        try ProtoJSONReader.pack(type, json: Array(json.utf8))
    }

    private func refusal(_ type: ProtoMessage.MessageType, _ json: String) -> ProtoJSONError? {
        do {
            _ = try pack(type, json)
            return nil
        } catch {
            return error
        }
    }

    private func proto3(_ type: ProtoMessage.MessageType, _ json: String) throws -> String {
        String(decoding: try ProtoJSON.proto3(type, try pack(type, json)), as: UTF8.self)
    }

    private var bytesType: ProtoMessage.MessageType {
        var message = Grpc__Reflection__V1__FileDescriptorResponse()
        grpc__reflection__v1__file_descriptor_response__init(&message)
        return ProtoMessage.MessageType(descriptor: message.base.descriptor)
    }

    // MARK: Hostile

    @Test func unknownFieldsAreRefusedNamingThem() {
        let error = refusal(HeraldRPC.getMessage.request, #"{"bundleId": "a", "bundelId": "b"}"#)
        #expect(error?.field == "bundelId")
        #expect(error?.reason.contains("unknown field \"bundelId\"") == true)
        let nested = refusal(HeraldRPC.schedule.request, #"{"content": {"title": {"txt": "x"}}}"#)
        #expect(nested?.field == "content.title.txt")
    }

    @Test func wrongTypesAreRefused() {
        for json in [
            #"{"bundleId": 5}"#, #"{"bundleId": true}"#, #"{"bundleId": ["a"]}"#, #"{"bundleId": {}}"#,
            #"{"platform": true}"#, #"{"platform": 1.5}"#, #"{"deliverWithinHours": "three"}"#,
            #"{"deliverWithinHours": true}"#, #"{"content": "text"}"#, #"{"content": []}"#,
        ] {
            #expect(refusal(HeraldRPC.schedule.request, json) != nil, "\(json)")
        }
        #expect(refusal(HeraldRPC.listMessages.request, #"{"states": "MESSAGE_STATE_SENT"}"#)?.field == "states")
        #expect(refusal(HeraldRPC.listMessages.request, #"{"states": [null]}"#)?.field == "states[0]")
        #expect(refusal(HeraldRPC.getMessage.request, #"[]"#) != nil)
        #expect(refusal(HeraldRPC.getMessage.request, #""a""#) != nil)
    }

    @Test func integersOutOfRangeOrFractionalAreRefused() {
        for json in [
            #"{"pageSize": 2147483648}"#, #"{"pageSize": -2147483649}"#, #"{"pageSize": "99999999999"}"#,
            #"{"pageSize": 1.5}"#, #"{"pageSize": "1.5"}"#, #"{"pageSize": 1e300}"#, #"{"pageSize": " 1"}"#,
        ] {
            #expect(refusal(HeraldRPC.listMessages.request, json)?.field == "pageSize", "\(json)")
        }
        for json in [#"{"deliverWithinHours": -1}"#, #"{"deliverWithinHours": 4294967296}"#, #"{"deliverWithinHours": "-1"}"#] {
            #expect(refusal(HeraldRPC.schedule.request, json)?.field == "deliverWithinHours", "\(json)")
        }
        #expect(refusal(HeraldRPC.status.reply, #"{"uptimeSeconds": "18446744073709551616"}"#) != nil)
        #expect(refusal(HeraldRPC.status.reply, #"{"oldestDueLagMs": "9223372036854775808"}"#) != nil)
        #expect(refusal(HeraldRPC.status.reply, #"{"uptimeSeconds": -1}"#) != nil)
    }

    @Test func unknownEnumNamesAndNumbersAreRefused() {
        #expect(refusal(HeraldRPC.schedule.request, #"{"platform": "PLATFORM_WINDOWS"}"#)?.field == "platform")
        #expect(refusal(HeraldRPC.schedule.request, #"{"platform": "ios"}"#)?.field == "platform")
        #expect(refusal(HeraldRPC.schedule.request, #"{"platform": 99}"#)?.field == "platform")
    }

    @Test func badBase64IsRefused() {
        for json in [#"{"fileDescriptorProto": ["a"]}"#, #"{"fileDescriptorProto": ["ab$d"]}"#, #"{"fileDescriptorProto": [5]}"#] {
            #expect(refusal(bytesType, json)?.field == "fileDescriptorProto[0]", "\(json)")
        }
    }

    @Test func theReaderBoundsHold() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(refusal(HeraldRPC.getMessage.request, #"{"bundleId": \#(deep)}"#) != nil)
        let huge = "[" + Array(repeating: "\"MESSAGE_STATE_SENT\"", count: 20_000).joined(separator: ",") + "]"
        #expect(refusal(HeraldRPC.listMessages.request, #"{"states": \#(huge)}"#)?.reason.contains("values") == true)
        #expect(refusal(HeraldRPC.getMessage.request, "{\"bundleId\": \"a\u{0}\"}") != nil)
        #expect(refusal(HeraldRPC.getMessage.request, #"{"bundleId": "a\u0000"}"#) != nil)
        #expect(refusal(HeraldRPC.getMessage.request, #"{"bundleId": "a", "bundleId": "b"}"#) != nil)
        #expect(refusal(HeraldRPC.getMessage.request, #"{"bundleId": "a"} x"#) != nil)
        #expect(refusal(HeraldRPC.getMessage.request, #"{"bundleId": "a""#) != nil)
    }

    @Test func oneFieldTwiceOrTwoOfOneOneofAreRefused() {
        #expect(refusal(HeraldRPC.getMessage.request, #"{"bundleId": "a", "bundle_id": "b"}"#)?.reason.contains("twice") == true)
        let both = refusal(HeraldRPC.schedule.request, #"{"deliverWithinHours": 2, "targetDeliveryTime": "2030-01-01T00:00:00Z"}"#)
        #expect(both?.reason.contains("oneof") == true)
    }

    // MARK: Accepted

    @Test func bothNamesNumbersAsStringsEnumsByNumberAndNullAsDefault() throws {
        let camel = try pack(HeraldRPC.schedule.request, """
            {"bundleId": "com.a", "platform": "PLATFORM_IOS", "deliverWithinHours": "3", "campaignId": null,
             "content": {"title": {"text": "T"}, "body": {"translations": {"de": "B", "en": "E"}},
                         "userInfo": {"k": [1, "x", true, null, {"n": 2.5}]}}}
            """)
        let snake = try pack(HeraldRPC.schedule.request, """
            {"bundle_id": "com.a", "platform": 1, "deliver_within_hours": 3.0,
             "content": {"title": {"text": "T"}, "body": {"translations": {"de": "B", "en": "E"}},
                         "user_info": {"k": [1, "x", true, null, {"n": 2.5}]}}}
            """)
        #expect(camel == snake)
        let node = try ProtoMessage.read(HeraldRPC.schedule.request, camel)
        #expect(node["deliver_within_hours"]?.text == "3")
        #expect(node["platform"]?.text == "ios")
    }

    @Test func aMessagePrintsAsProto3JSONAndReadsBack() throws {
        let json = try proto3(HeraldRPC.status.reply, """
            {"uptimeSeconds": "18446744073709551615", "oldestDueLagMs": "-9223372036854775808",
             "serving": "SERVING_STATE_SERVING", "messages": [], "version": null}
            """)
        // Keys in JSONWriter's sorted order; 64-bit integers as strings, enums by name.
        #expect(json == #"{"oldestDueLagMs":"-9223372036854775808","serving":"SERVING_STATE_SERVING","uptimeSeconds":"18446744073709551615"}"#)
        // Defaults left out; what is printed reads back to the same bytes.
        let bytes = try pack(HeraldRPC.status.reply, json)
        #expect(String(decoding: try ProtoJSON.proto3(HeraldRPC.status.reply, bytes), as: UTF8.self) == json)
        #expect(try proto3(HeraldRPC.getMessage.request, #"{"bundleId": "", "idempotencyKey": null}"#) == "{}")
    }

    @Test func bytesAreBase64StandardOrURLSafe() throws {
        let standard = try pack(bytesType, #"{"fileDescriptorProto": ["+/8=", ""]}"#)
        let urlSafe = try pack(bytesType, #"{"file_descriptor_proto": ["-_8", ""]}"#)
        #expect(standard == urlSafe)
        #expect(String(decoding: try ProtoJSON.proto3(bytesType, standard), as: UTF8.self) == #"{"fileDescriptorProto":["+/8=",""]}"#)
    }
}
