import Foundation
import GRPCEngine
import HeraldCore
import HeraldPrimitives
import HeraldProtos
import HeraldStorage
import Logging
import HeraldTestSupport
import Testing

@testable import HeraldService

/// Protobuf wire bytes built by hand, as an attacker would.
enum WireBytes {
    static func varint(_ n: UInt64) -> [UInt8] {
        var n = n
        var out: [UInt8] = []
        while n >= 0x80 {
            out.append(UInt8(n & 0x7F) | 0x80)
            n >>= 7
        }
        out.append(UInt8(n))
        return out
    }

    static func bytes(_ number: UInt64, _ payload: [UInt8]) -> [UInt8] {
        varint(number << 3 | 2) + varint(UInt64(payload.count)) + payload
    }

    static func string(_ number: UInt64, _ text: String) -> [UInt8] { bytes(number, Array(text.utf8)) }

    static func number(_ number: UInt64, _ value: UInt64) -> [UInt8] { varint(number << 3) + varint(value) }

    /// LocalizedText{text}.
    static func text(_ s: [UInt8]) -> [UInt8] { bytes(1, s) }

    /// LocalizedText{translations}.
    static func translations(_ pairs: [([UInt8], [UInt8])]) -> [UInt8] {
        pairs.flatMap { bytes(2, bytes(1, $0.0) + bytes(2, $0.1)) }
    }

    /// Struct{fields} with string values.
    static func structObject(_ pairs: [(String, [UInt8])]) -> [UInt8] {
        pairs.flatMap { bytes(1, string(1, $0.0) + bytes(2, bytes(3, $0.1))) }
    }

    /// A RenderRequest for iOS with `content` (field 3) and extra fields.
    static func render(content: [UInt8], _ extra: [UInt8] = []) -> [UInt8] {
        string(1, "com.example.app") + number(2, 1) + bytes(3, content) + extra
    }

    static let plainContent = bytes(1, text(Array("Hi".utf8))) + bytes(3, text(Array("There".utf8)))
}

/// Hostile request content through the real decoding path (protobuf-c,
/// the wire walk, the decoder, the handlers).
@Suite("Hostile requests", .timeLimit(.minutes(1)))
struct HostileRequestTests {
    let render = RenderService(policy: AccessPolicy(), now: { 1_800_000_000_000 })

    /// The status a Render call ends with (nil on success).
    func status(_ bytes: [UInt8]) -> GRPCStatus? {
        do {
            _ = try render.render(GRPCRequest(path: RenderService.path, message: bytes))
            return nil
        } catch {
            return DomainStatus.status(for: error)
        }
    }

    func expectInvalid(_ bytes: [UInt8], naming text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let s = status(bytes)
        #expect(s?.code == .invalidArgument, sourceLocation: sourceLocation)
        #expect(s?.message.contains(text) == true, "\(s?.message ?? "no error")", sourceLocation: sourceLocation)
        #expect((s?.message.utf8.count ?? 0) < 300, sourceLocation: sourceLocation)
    }

    // MARK: NUL bytes

    @Test func nulBytesInEveryKindOfStringAreRefusedByPath() {
        typealias W = WireBytes
        let body = W.bytes(3, W.text(Array("b".utf8)))
        expectInvalid(W.render(content: W.plainContent, W.string(9, "key\0x")), naming: "idempotency_key: contains a NUL byte")
        expectInvalid(W.render(content: W.bytes(1, W.text(Array("Hi\0hidden".utf8))) + body),
                      naming: "content.title.text: contains a NUL byte")
        let translated = W.bytes(1, W.translations([(Array("en".utf8), Array("a\0b".utf8))]))
            + W.bytes(3, W.translations([(Array("en".utf8), Array("b".utf8))])) + W.string(4, "en")
        expectInvalid(W.render(content: translated), naming: "content.title.translations[en]: contains a NUL byte")
        let badKey = W.bytes(1, W.translations([(Array("e\0n".utf8), Array("a".utf8))]))
            + W.bytes(3, W.translations([(Array("en".utf8), Array("b".utf8))])) + W.string(4, "en")
        expectInvalid(W.render(content: badKey), naming: "content.title.translations (a key): contains a NUL byte")
        let userInfo = W.bytes(7, W.structObject([("deeplink", Array("shop://x\0y".utf8))]))
        expectInvalid(W.render(content: W.plainContent + userInfo), naming: "content.user_info.deeplink: contains a NUL byte")
        let userKey = W.bytes(7, W.structObject([("a\0b", Array("v".utf8))]))
        expectInvalid(W.render(content: W.plainContent + userKey), naming: "content.user_info (a key): contains a NUL byte")
        // ios: {"aps": {"alert": {"list": ["ok", "x\0"]}}}
        let list = W.bytes(6, W.bytes(1, W.bytes(3, Array("ok".utf8))) + W.bytes(1, W.bytes(3, Array("x\0".utf8))))
        let alert = W.bytes(1, W.string(1, "list") + W.bytes(2, list))
        let aps = W.bytes(1, W.string(1, "alert") + W.bytes(2, W.bytes(5, alert)))
        let iosStruct = W.bytes(1, W.string(1, "aps") + W.bytes(2, W.bytes(5, aps)))
        expectInvalid(W.render(content: W.plainContent, W.bytes(7, iosStruct)), naming: "ios.aps.alert.list[1]: contains a NUL byte")
    }

    @Test func nulBytesInEveryRPCAreRefused() throws {
        typealias W = WireBytes
        let cases: [(any GeneratedMessage.Type, [UInt8], String)] = [
            (Herald__V1__ScheduleRequest.self, W.string(3, "alice\0mallory"), "user_id"),
            (Herald__V1__CancelRequest.self, W.string(5, "nul-a\0x"), "idempotency_key"),
            (Herald__V1__RegisterDeviceRequest.self, W.string(5, "de\0CH"), "locale"),
            (Herald__V1__UnregisterDeviceRequest.self, W.string(2, "ab\0cd"), "device_token"),
            (Herald__V1__ReportEventRequest.self, W.string(7, "2026\0"), "occurred_at"),
            (Grpc__Health__V1__HealthCheckRequest.self, W.string(1, "herald.v1.PushService\0x"), "service"),
        ]
        for (type, bytes, field) in cases {
            func check<M: GeneratedMessage>(_ type: M.Type) {
                #expect(throws: GRPCStatus(.invalidArgument, "\(field): contains a NUL byte")) {
                    try ProtobufC.withUnpacked(M.self, from: bytes) { _ in () }
                }
            }
            check(type)
        }
    }

    // MARK: Repeated embedded messages

    @Test func repeatedEmbeddedMessagesMergeAsProtobufDefines() throws {
        typealias W = WireBytes
        // content{title} then content{body}: one content with both.
        let split = W.string(1, "com.example.app") + W.number(2, 1)
            + W.bytes(3, W.bytes(1, W.text(Array("Hi".utf8))))
            + W.bytes(3, W.bytes(3, W.text(Array("There".utf8))) + W.number(6, 4))
        let merged = try ProtobufC.withUnpacked(Herald__V1__RenderRequest.self, from: split) { wire in
            var decoder = RequestDecoder()
            let content = decoder.content(wire.content)
            try decoder.finish()
            return content
        }
        #expect(merged?.title == .text("Hi"))
        #expect(merged?.body == .text("There"))
        #expect(merged?.badge == 4)

        // Nested: user_info twice, each a Struct with a key; a Value's
        // struct_value twice; a later oneof member wins over an earlier one.
        let info1 = W.bytes(7, W.bytes(1, W.string(1, "a") + W.bytes(2, W.bytes(5, W.structObject([("x", Array("1".utf8))])))))
        let info2 = W.bytes(7, W.bytes(1, W.string(1, "a") + W.bytes(2, W.bytes(5, W.structObject([("y", Array("2".utf8))]))))
            + W.structObject([("b", Array("3".utf8))]))
        let oneof = W.bytes(7, W.bytes(1, W.string(1, "c") + W.bytes(2, W.bytes(5, []) + W.bytes(3, Array("s".utf8)))))
        let nested = W.render(content: W.plainContent + info1 + info2 + oneof)
        let info = try ProtobufC.withUnpacked(Herald__V1__RenderRequest.self, from: nested) { wire in
            var decoder = RequestDecoder()
            let content = decoder.content(wire.content)
            try decoder.finish()
            return content?.userInfo
        }
        // Map entries with the same key: the last wins (protobuf map semantics).
        #expect(info == ["a": ["y": "2"], "b": "3", "c": "s"])
        #expect(status(nested) == nil)
    }

    // MARK: Limits

    @Test func limitsAreNamedAndCheckedBeforeBuilding() {
        typealias W = WireBytes
        let keys = (0...Validator.Limits.objectKeys).map { ("k\($0)", Array("v".utf8)) }
        expectInvalid(W.render(content: W.plainContent + W.bytes(7, W.structObject(keys))),
                      naming: "content.user_info: has 1001 keys; the limit is 1000 keys per object")
        expectInvalid(W.render(content: W.plainContent, W.bytes(8, W.structObject(keys))),
                      naming: "android: has 1001 keys; the limit is 1000 keys per object")
        let deepKeys = W.bytes(1, W.string(1, "aps") + W.bytes(2, W.bytes(5, W.structObject(keys))))
        expectInvalid(W.render(content: W.plainContent, W.bytes(7, deepKeys)),
                      naming: "ios.aps: has 1001 keys; the limit is 1000 keys per object")
        let items = W.bytes(6, (0...Validator.Limits.listItems).flatMap { _ in W.bytes(1, W.bytes(3, [0x61])) })
        expectInvalid(W.render(content: W.plainContent + W.bytes(7, W.bytes(1, W.string(1, "l") + W.bytes(2, items)))),
                      naming: "content.user_info.l: has 2049 items; the limit is 2048 items per list")
        let locales = (0...Validator.Limits.localesPerText).map { (Array("l\($0)".utf8), Array("t".utf8)) }
        expectInvalid(W.render(content: W.bytes(1, W.translations(locales)) + W.bytes(3, W.translations(locales)) + W.string(4, "l0")),
                      naming: "content.title.translations: has 201 locales; the limit is 200 locales per text")
        let longTag = "de-" + String(repeating: "x", count: 17_000)
        expectInvalid(W.render(content: W.plainContent + W.string(4, longTag)),
                      naming: "content.default_locale: locale tag \"de-xxx")
        expectInvalid(W.render(content: W.plainContent, W.string(10, longTag)), naming: "the limit is 35")
        // At the limits, fine.
        let atLimit = (1..<Validator.Limits.localesPerText).map { (Array("l\($0)".utf8), Array("t".utf8)) }
        #expect(status(W.render(content: W.bytes(1, W.translations(atLimit)) + W.bytes(3, W.translations(atLimit)) + W.string(4, "l1"))) == nil)
    }

    // MARK: Device and event validation

    @Test func timeZonesMustExistInTheTzDatabase() throws {
        let root = NSTemporaryDirectory() + "herald-tz-\(UUIDv4.make())"
        try FileManager.default.createDirectory(atPath: root + "/Europe", withIntermediateDirectories: true)
        try Data("TZif2...".utf8).write(to: URL(fileURLWithPath: root + "/Europe/Zurich"))
        try Data("not a zone".utf8).write(to: URL(fileURLWithPath: root + "/Europe/Fake"))
        defer { try? FileManager.default.removeItem(atPath: root) }
        let db = TimeZoneDatabase(root: root)
        #expect(db.problem("Europe/Zurich") == nil)
        #expect(db.problem("") == nil)
        #expect(db.problem("Mars/Olympus")?.contains("\"Mars/Olympus\" is not an IANA time zone name") == true)
        #expect(db.problem("Europe/Fake") != nil)      // no TZif magic
        #expect(db.problem("Europe") != nil)           // a directory
        #expect(db.problem("../Europe/Zurich") != nil) // not a relative name inside the database
        #expect(db.problem("/etc/passwd") != nil)
        #expect(db.problem(String(repeating: "A", count: 20_000))?.contains("the limit is 64") == true)
        // Cached: a name's answer does not change when the file goes away.
        try FileManager.default.removeItem(atPath: root + "/Europe/Zurich")
        #expect(db.problem("Europe/Zurich") == nil)
        if FileManager.default.fileExists(atPath: "/usr/share/zoneinfo/Europe/Zurich") {
            #expect(TimeZoneDatabase.system.problem("Europe/Zurich") == nil)
            #expect(TimeZoneDatabase.system.problem("Mars/Olympus") != nil)
        }
    }

    @Test(arguments: [
        ("zz", false), ("ab", false), (String(repeating: "ab", count: 32), true), (String(repeating: "AB", count: 32), true),
        (String(repeating: "a", count: 65), false), ("fcm:" + String(repeating: "A1-_", count: 40), true),
        ("short:token", false), (String(repeating: "z ", count: 40), false),
    ])
    func unregisterTokensAreValidated(token: String, valid: Bool) {
        #expect((DeviceHandlers.unregisterTokenProblem(token) == nil) == valid)
    }

    // MARK: What Schedule stores

    @Test func scheduleStoresNeitherTheOtherPlatformsOverrideNorUnknownFields() async throws {
        typealias W = WireBytes
        let directory = try makeTemporaryDirectory(prefix: "herald-hostile")
        let store = try SQLiteStore(path: "\(directory)/herald.sqlite")
        defer { removeTemporaryDirectory(directory) }
        let clock = ManualClock(now: 1_800_000_000_000)
        let scheduler = Scheduler(clock: clock, logger: Logger(label: "test"))
        let service = ScheduleService(
            policy: AccessPolicy(), store: store, scheduler: scheduler, clock: clock, split: .default, graceSeconds: 30)

        let big = String(repeating: "x", count: 200_000)
        let unknown = W.string(99, big) + W.number(98, 7)
        let request = W.string(1, "com.example.app") + W.number(2, 1) + W.string(3, "u1") + W.string(4, "c1")
            + W.string(5, "hostile-1") + W.number(7, 1)
            + W.bytes(10, W.plainContent + W.string(99, big))       // unknown inside content too
            + W.bytes(14, W.structObject([("sound", Array("ios.caf".utf8))]))
            + W.bytes(15, W.structObject([("junk", Array(big.utf8))]))
            + unknown
        _ = try await GRPCUnaryHandler.deferred(inlineBytes: .max) { try service.schedule($0, reply: DomainReply($1)) }
            .callInProcess(GRPCRequest(path: ScheduleService.path, message: request))
        let stored = try #require(try await store.message(bundleID: "com.example.app", idempotencyKey: "hostile-1"))
        #expect(stored.request.count < 200)
        let message = try StoredRequest.decode(stored.request, idempotencyKey: stored.idempotencyKey)
        #expect(message.android == nil)
        #expect(message.ios == ["sound": "ios.caf"])
        #expect(message.content.title == .text("Hi"))
        await store.close()
    }
}
