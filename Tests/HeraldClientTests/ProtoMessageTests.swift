import HeraldPrimitives
import Testing

@testable import HeraldClient

/// Requests built through the protoc-c descriptors, read back the same way.
@Suite struct ProtoMessageTests {
    @Test func unknownFieldsWrongKindsAndUnknownEnumsAreRefused() {
        #expect(throws: ClientFailure.self) { try ProtoMessage.pack(HeraldRPC.getMessage.request, [("bundel_id", .string("a"))]) }
        #expect(throws: ClientFailure.self) { try ProtoMessage.pack(HeraldRPC.getMessage.request, [("bundle_id", .int(1))]) }
        #expect(throws: ClientFailure.self) {
            try ProtoMessage.pack(HeraldRPC.cancel.request, [("platform", .enumName("PLATFORM_WINDOWS"))])
        }
        #expect(throws: ClientFailure.self) {
            try ProtoMessage.pack(HeraldRPC.schedule.request, [("deliver_within_hours", .uint(UInt64(UInt32.max) + 1))])
        }
        #expect(throws: ClientFailure.self) { try ProtoMessage.pack(HeraldRPC.getMessage.request, [("bundle_id", .string("a\0b"))]) }
        #expect(throws: ClientFailure.self) { try ProtoMessage.pack(HeraldRPC.listMessages.request, [("states", .string("x"))]) }
    }

    @Test func garbageRepliesAreInternal() {
        do {
            _ = try ProtoMessage.read(HeraldRPC.schedule.reply, [0xFF, 0xFF, 0xFF])
            Issue.record("parsed garbage")
        } catch {
            #expect(error.code == .internalError)
        }
    }

    @Test func aScheduleRequestRoundTripsWithOneofsNestingAndMaps() throws {
        let bytes = try ProtoMessage.pack(HeraldRPC.schedule.request, [
            ("bundle_id", .string("com.example.app")),
            ("platform", .enumName("PLATFORM_IOS")),
            ("deliver_within_hours", .uint(3)),
            ("ttl_seconds", .uint(0)),
            ("content", .message([
                ("title", .message([("text", .string("Hallo"))])),
                ("body", .message([("translations", .list([.message([("key", .string("de")), ("value", .string("Welt"))])]))])),
                ("badge", .int(0)),
            ])),
        ])
        // A request type has the same fields as itself: read it back through the same descriptors.
        let node = try ProtoMessage.read(HeraldRPC.schedule.request, bytes)
        #expect(node["bundle_id"]?.text == "com.example.app")
        #expect(node["platform"]?.text == "ios")
        #expect(node["deliver_within_hours"]?.text == "3")
        #expect(node["target_delivery_time"] == nil, "the other member of the oneof stays unset")
        #expect(node["ttl_seconds"]?.text == "0", "a oneof set to 0 is present")
        #expect(node["content"]?["title"]?["text"]?.text == "Hallo")
        #expect(node["content"]?["body"]?["translations"] == .map([ProtoField("de", .scalar(json: "Welt", text: "Welt"))]))
        #expect(node["content"]?["badge"]?.text == "0")
        let json = ProtoJSON.value(node)
        #expect(json["platform"] == .string("PLATFORM_IOS"))
        #expect(json["deliverWithinHours"] == .number(3))
        #expect(json["content"]?["body"]?["translations"]?["de"] == .string("Welt"))
    }

    @Test func repeatedEnumsAndSixtyFourBitIntegers() throws {
        let bytes = try ProtoMessage.pack(HeraldRPC.listMessages.request, [
            ("states", .list([.enumName("MESSAGE_STATE_SENT"), .enumName("MESSAGE_STATE_FAILED")])), ("page_size", .int(5)),
        ])
        let node = try ProtoMessage.read(HeraldRPC.listMessages.request, bytes)
        #expect(node["states"] == .list([.scalar(json: "MESSAGE_STATE_SENT", text: "sent"), .scalar(json: "MESSAGE_STATE_FAILED", text: "failed")]))
        #expect(ProtoMessage.enumName("no-devices", prefix: "MESSAGE_STATE_") == "MESSAGE_STATE_NO_DEVICES")
        #expect(ProtoMessage.enumName("MESSAGE_STATE_SENT", prefix: "MESSAGE_STATE_") == "MESSAGE_STATE_SENT")
        #expect(ProtoMessage.enumPrefix("MessageState") == "MESSAGE_STATE_")
    }

    @Test func anEmptyReplyReadsAsDefaults() throws {
        let node = try ProtoMessage.read(HeraldRPC.cancel.reply, [])
        #expect(node["cancelled"]?.text == "false")
        #expect(node["state"]?.text == "unspecified")
        #expect(ProtoJSON.line(node) == #"{"cancelled":false,"state":"MESSAGE_STATE_UNSPECIFIED"}"#)
    }

    @Test func tablesAlignNamesAndListRows() {
        let node = ProtoNode.message([
            ProtoField("message_id", .scalar(json: "m", text: "m-1")),
            ProtoField("store", .message([ProtoField("kind", .scalar(json: "sqlite", text: "sqlite"))])),
            ProtoField("warnings", .list([])),
            ProtoField("rows", .list([
                .message([ProtoField("state", .scalar(json: "", text: "sent")), ProtoField("count", .scalar(json: "", text: "12"))]),
                .message([ProtoField("state", .scalar(json: "", text: "no_devices")), ProtoField("count", .scalar(json: "", text: "3"))]),
            ])),
        ])
        #expect(ProtoTable.render(node) == """
            message_id: m-1
            store.kind: sqlite
            warnings:   (none)

            rows (2):
            state       count
            sent        12
            no_devices  3
            """)
    }

    @Test func structsRoundTripAsPlainJSON() throws {
        let json = try JSONParser.parse(#"{"a":[1.5,true,null,"x",{"b":{}}],"c":"d","e":-3}"#)
        let bytes = try ProtoMessage.pack(HeraldRPC.render.request, [("ios", try ProtoValue.structValue(json, flag: "--ios"))])
        let node = try ProtoMessage.read(HeraldRPC.render.request, bytes)
        #expect(node["ios"] == .json(json))
        #expect(ProtoJSON.value(node)["ios"] == json)
        #expect(throws: ClientFailure.self) { try ProtoValue.structValue(.array([]), flag: "--ios") }
        #expect(throws: ClientFailure.self) { try ProtoValue.structValue(.string("x"), flag: "--ios") }
    }
}
