import CInterop
import HeraldPrimitives
import HeraldProtos
import Testing

@testable import HeraldClient

/// ``ProtoJSONReader`` writes wire bytes straight from the JSON: for every
/// message of every method (fields filled, and at their defaults) and for
/// hostile bodies, it must refuse what the old path (JSON → ProtoValue →
/// protoc-c structs → pack) refused, with the same error, and accept the rest
/// as bytes that protobuf-c unpacks to the same message.
@Suite struct ProtoJSONWireEqualityTests {
    /// `bytes` unpacked by protobuf-c and packed again (nil when they do not unpack).
    private func canonical(_ type: ProtoMessage.MessageType, _ bytes: [UInt8]) -> [UInt8]? {
        let message = bytes.withUnsafeBufferPointer { buffer in
            protobuf_c_message_unpack(type.descriptor, nil, buffer.count, buffer.baseAddress)
        }
        guard let message else { return nil }
        defer { protobuf_c_message_free_unpacked(message, nil) }
        var out = [UInt8](repeating: 0, count: protobuf_c_message_get_packed_size(message))
        let written = out.withUnsafeMutableBufferPointer { protobuf_c_message_pack(message, $0.baseAddress) }
        return Array(out.prefix(written))
    }

    private func compare(
        _ type: ProtoMessage.MessageType, _ json: String, accepted: Bool, limits: WebJSONReader.Limits = WebJSONReader.Limits(),
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let body = Array(json.utf8)
        let new: Result<[UInt8], ProtoJSONError> = Result { () throws(ProtoJSONError) in try ProtoJSONReader.pack(type, json: body, limits: limits) }
        let old: Result<[UInt8], ProtoJSONError> = Result { () throws(ProtoJSONError) in try LegacyProtoJSONReader.pack(type, json: body, limits: limits) }
        switch (new, old) {
        case (.success(let a), .success(let b)):
            #expect(accepted, "accepted: \(json)", sourceLocation: sourceLocation)
            let ca = canonical(type, a), cb = canonical(type, b)
            #expect(ca != nil, "new bytes do not unpack: \(json)", sourceLocation: sourceLocation)
            #expect(ca == cb, "\(json)", sourceLocation: sourceLocation)
        case (.failure(let a), .failure(let b)):
            #expect(!accepted, "refused: \(json): \(a)", sourceLocation: sourceLocation)
            #expect(a.field == b.field && a.reason == b.reason, "\(json): \(a) vs \(b)", sourceLocation: sourceLocation)
        default:
            Issue.record("one path accepts, one refuses: \(json): new \(new), old \(old)", sourceLocation: sourceLocation)
        }
    }

    /// Every message type the methods take or return.
    private var types: [ProtoMessage.MessageType] {
        ProtoServices.methods.keys.sorted().flatMap { [ProtoServices.methods[$0]!.request, ProtoServices.methods[$0]!.reply] }
    }

    // MARK: Hostile first

    @Test func hostileBodiesAreRefusedTheSameWay() {
        let schedule = HeraldRPC.schedule.request
        for json in [
            #"{"bundleId": "a", "bundelId": "b"}"#, #"{"content": {"title": {"txt": "x"}}}"#, #"{"bundleId": 5}"#,
            #"{"platform": true}"#, #"{"platform": 1.5}"#, #"{"platform": "PLATFORM_NOPE"}"#, #"{"platform": 99}"#,
            #"{"deliverWithinHours": "three"}"#, #"{"deliverWithinHours": 1.5}"#,
            #"{"content": "text"}"#, #"{"content": []}"#, #"{"bundleId": "a", "bundle_id": "b"}"#,
            #"{"content": {"body": {"translations": {"de": null}}}}"#, #"{"content": {"body": {"translations": []}}}"#,
            #"{"content": {"userInfo": []}}"#, #"{"content": {"userInfo": {"a": 1, "a": 2}}}"#,
            #"{"bundleId": "a\u0000b"}"#, #"[]"#, #""a""#, #"{"#, #"{"bundleId": "a"} x"#, "",
        ] {
            compare(schedule, json, accepted: false)
        }
        compare(HeraldRPC.listMessages.request, #"{"states": "MESSAGE_STATE_SENT"}"#, accepted: false)
        compare(HeraldRPC.listMessages.request, #"{"states": [null]}"#, accepted: false)
        compare(HeraldRPC.listMessages.request, #"{"pageSize": "99999999999"}"#, accepted: false)
        compare(HeraldRPC.listMessages.request, #"{"pageSize": 2147483648}"#, accepted: false)
        compare(HeraldRPC.listMessages.request, #"{"pageSize": -2147483649}"#, accepted: false)
        compare(HeraldRPC.status.reply, #"{"uptimeSeconds": "-1"}"#, accepted: false)
        compare(HeraldRPC.status.reply, #"{"uptimeSeconds": "18446744073709551616"}"#, accepted: false)
    }

    @Test func lateJSONErrorsWinAndLimitsHoldAsWhenTheTreeWasReadWhole() {
        let schedule = HeraldRPC.schedule.request
        for json in [
            #"{"bundleId": 5, "x": }"#, #"{"bundelId": "a", "content": {"title": {"text": "x"}}, }"#,
            #"{"content": {"title": {"txt": "x"}, "title": {}}}"#, #"{"content": {"body": {"translations": {"de": "a", "de": "b"}}}}"#,
            #"{"content": {"title": {"text": "x""#, #"{"content": {"title": {"text": 1}}} ]"#, #"{"content": {"title" {}}}"#,
            #"{"content": {"title": {"translations": {"de": 5}}}}"#, #"{"content": {"title": {"translations": {"de": "a",}}}}"#,
            #"{"content": {"userInfo": {"a": [1, 2,]}}}"#, #"{"content": {"title": {"text": "x"}, "body": {"text": "\ud800"}}}"#,
            #"{"content": {"title": {"text": "x"}}, "content": {}}"#, #"{"content": {"title": {"text": "x"}} "bundleId": "a"}"#,
        ] {
            compare(schedule, json, accepted: false)
        }
        let list = HeraldRPC.listMessages.request
        for json in [#"{"states": ["MESSAGE_STATE_SENT", ]}"#, #"{"states": ["MESSAGE_STATE_SENT" 1]}"#, #"{"states": [1, "NOPE", tru]}"#] {
            compare(list, json, accepted: false)
        }
        var shallow = WebJSONReader.Limits()
        shallow.maxDepth = 2
        compare(schedule, #"{"content": {"title": {"text": "x"}}}"#, accepted: false, limits: shallow)
        compare(schedule, #"{"content": {"title": null}}"#, accepted: true, limits: shallow)
        var few = WebJSONReader.Limits()
        few.maxValues = 5
        compare(schedule, #"{"content": {"title": {"text": "x"}, "body": {"text": "y"}}}"#, accepted: false, limits: few)
        compare(schedule, #"{"content": {"title": {"text": "x"}}, "bundleId": "b"}"#, accepted: true, limits: few)
        compare(list, #"{"states": [1, 2, 3, 4, 5, 6]}"#, accepted: false, limits: few)
        var short = WebJSONReader.Limits()
        short.maxStringBytes = 3
        compare(schedule, #"{"content": {"title": {"text": "long"}}}"#, accepted: false, limits: short)
        compare(schedule, #"{"content": {"title": {"longer": "x"}}}"#, accepted: false, limits: short)
    }

    // MARK: Accepted

    @Test func whitespaceAnywhereIsAcceptedTheSameWay() {
        compare(HeraldRPC.schedule.request, " \n{ \"content\" :\t{ \"title\" : { \"text\" : \"x\" } , \"body\":{\"translations\" : { \"de\" : \"y\" } } } ,\r\n \"bundleId\" : \"b\" } \n", accepted: true)
        compare(HeraldRPC.listMessages.request, #"{ "states" : [ 1 , "MESSAGE_STATE_SENT" ] , "pageSize" : 3 }"#, accepted: true)
        compare(HeraldRPC.listMessages.request, #"{"states": []}"#, accepted: true)
    }

    @Test func everyMessageFilledDecodesToTheSameMessage() throws {
        #expect(types.count >= 20)
        // A filled body is not an empty message.
        #expect(try ProtoJSONReader.pack(HeraldRPC.schedule.request, json: Array(Self.sample(HeraldRPC.schedule.request.descriptor, variant: 0, depth: 0).utf8)).count > 50)
        for type in types {
            for variant in 0..<3 {
                compare(type, Self.sample(type.descriptor, variant: variant, depth: 0), accepted: true)
            }
        }
    }

    @Test func everyMessageAtItsDefaultsDecodesToTheSameMessage() {
        for type in types {
            compare(type, "{}", accepted: true)
            compare(type, Self.sample(type.descriptor, variant: -1, depth: 0), accepted: true)
        }
    }

    @Test func wellKnownJSONTypesAndNullsDecodeToTheSameMessage() {
        let schedule = HeraldRPC.schedule.request
        for json in [
            #"{"content": {"userInfo": {"k": [1, "x", true, null, {"n": 2.5, "e": {}, "l": []}], "z": null}}}"#,
            #"{"content": {"userInfo": {}}, "campaignId": null, "platform": null}"#,
            #"{"bundleId": "com.a", "platform": "PLATFORM_IOS", "deliverWithinHours": "3", "content": {"title": {"text": "T"}, "body": {"translations": {"de": "B", "en": "E"}}}}"#,
            #"{"bundle_id": "com.a", "platform": 1, "deliver_within_hours": 3.0}"#,
        ] {
            compare(schedule, json, accepted: true)
        }
    }

    /// A JSON body filling every field of `descriptor` (one member per oneof):
    /// `variant` picks values (-1: every field at its default).
    static func sample(_ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, variant: Int, depth: Int) -> String {
        let name = String(cString: descriptor.pointee.name)
        switch name {
        case "google.protobuf.Struct": return variant < 0 ? "{}" : #"{"a": [1, "x", null, {"b": true}], "c": -2.5}"#
        case "google.protobuf.Value": return variant < 0 ? "null" : #"{"v": [\#(variant), "s"]}"#
        case "google.protobuf.ListValue": return variant < 0 ? "[]" : #"[1, "x", {"y": null}]"#
        default: break
        }
        guard depth < 4 else { return "{}" }
        var members: [String] = []
        var oneofs = Set<UInt32>()
        for index in 0..<Int(descriptor.pointee.n_fields) {
            let field = descriptor.pointee.fields[index]
            if field.flags & UInt32(PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue) != 0 {
                guard oneofs.insert(field.quantifier_offset).inserted else { continue }
            }
            let fieldName = String(cString: field.name)
            let key = (index + variant) % 2 == 0 ? fieldName : ProtoJSON.camelCase(fieldName)
            let value: String
            if field.label == PROTOBUF_C_LABEL_REPEATED, field.type == PROTOBUF_C_TYPE_MESSAGE, ProtoMessage.isMapEntry(field) {
                let entry = field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
                let keyField = entry.pointee.fields[0], valueField = entry.pointee.fields[1]
                let keys = keyField.type == PROTOBUF_C_TYPE_STRING ? ["\"k\"", "\"\""] :
                    keyField.type == PROTOBUF_C_TYPE_BOOL ? ["\"true\"", "\"false\""] : ["\"1\"", "\"0\""]
                value = "{" + keys.map { "\($0): \(scalar(valueField, variant: max(variant, 0), depth: depth))" }.joined(separator: ", ") + "}"
            } else if field.label == PROTOBUF_C_LABEL_REPEATED {
                value = variant < 0 ? "[]" : "[\(scalar(field, variant: variant, depth: depth)), \(scalar(field, variant: -1, depth: depth))]"
            } else {
                value = scalar(field, variant: variant, depth: depth)
            }
            members.append("\"\(key)\": \(value)")
        }
        return "{" + members.joined(separator: ", ") + "}"
    }

    private static func scalar(_ field: ProtobufCFieldDescriptor, variant: Int, depth: Int) -> String {
        let zero = variant < 0
        switch field.type {
        case PROTOBUF_C_TYPE_INT32, PROTOBUF_C_TYPE_SINT32, PROTOBUF_C_TYPE_SFIXED32:
            return zero ? "0" : ["-7", "\"2147483647\"", "-2147483648"][variant % 3]
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64:
            return zero ? "\"0\"" : ["\"-9223372036854775808\"", "42", "\"9223372036854775807\""][variant % 3]
        case PROTOBUF_C_TYPE_UINT32, PROTOBUF_C_TYPE_FIXED32:
            return zero ? "0" : ["4294967295", "\"1\"", "300"][variant % 3]
        case PROTOBUF_C_TYPE_UINT64, PROTOBUF_C_TYPE_FIXED64:
            return zero ? "\"0\"" : ["\"18446744073709551615\"", "1", "1e3"][variant % 3]
        case PROTOBUF_C_TYPE_FLOAT, PROTOBUF_C_TYPE_DOUBLE:
            return zero ? "0" : ["-1.5", "\"Infinity\"", "\"NaN\""][variant % 3]
        case PROTOBUF_C_TYPE_BOOL:
            return zero ? "false" : "true"
        case PROTOBUF_C_TYPE_STRING:
            return zero ? "\"\"" : ["\"s\"", "\"\\u00e9\\ud83d\\ude00 x\"", "\"a\\\"b\""][variant % 3]
        case PROTOBUF_C_TYPE_BYTES:
            return zero ? "\"\"" : ["\"AQI=\"", "\"-_8\"", "\"+/8=\""][variant % 3]
        case PROTOBUF_C_TYPE_ENUM:
            let descriptor = field.descriptor.assumingMemoryBound(to: ProtobufCEnumDescriptor.self)
            let values = descriptor.pointee.values!
            if zero { return "0" }
            let last = Int(descriptor.pointee.n_values) - 1
            return variant % 2 == 0 ? "\"\(String(cString: values[last].name))\"" : "\(values[last].value)"
        case PROTOBUF_C_TYPE_MESSAGE:
            return sample(field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self), variant: variant, depth: depth + 1)
        default:
            return "null"
        }
    }
}
