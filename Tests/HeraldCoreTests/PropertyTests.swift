@testable import HeraldPrimitives
import HeraldTestSupport
import Testing
@testable import HeraldCore

struct Generator {
    var rng: SplitMix64

    static let alphabet: [Character] = Array("abcXYZ019 -_\"\\/\n\t\u{0}\u{1F}\u{7F}éß€日本🎉\u{2028}\u{2029}\u{301}")

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }
    mutating func bool() -> Bool { Bool.random(using: &rng) }

    mutating func text(_ max: Int) -> String {
        String((0..<int(1...max)).map { _ in Self.alphabet.randomElement(using: &rng)! })
    }

    mutating func key() -> String {
        var k = text(8)
        while k == "aps" || k.hasPrefix("ctx_") { k = text(8) }
        return k
    }

    mutating func number() -> Double {
        switch int(0...3) {
        case 0: return Double(int(-1_000_000...1_000_000))
        case 1: return Double.random(in: -1e6...1e6, using: &rng)
        case 2: return Double(bitPattern: rng.next() & 0x7FEF_FFFF_FFFF_FFFF) * (bool() ? 1 : -1)
        default: return Double(int(-(1 << 53)...(1 << 53)))
        }
    }

    mutating func value(depth: Int) -> JSONValue {
        switch int(0...(depth > 2 ? 3 : 5)) {
        case 0: return .null
        case 1: return .bool(bool())
        case 2: return .number(number())
        case 3: return .string(text(12))
        case 4: return .array((0..<int(0...3)).map { _ in value(depth: depth + 1) })
        default:
            var o: JSONObject = [:]
            for _ in 0..<int(0...3) { o[key()] = value(depth: depth + 1) }
            return .object(o)
        }
    }

    mutating func localized(_ locales: [String]?, max: Int) -> LocalizedText {
        guard let locales else { return .text(text(max)) }
        var t: SortedMap<String> = [:]
        for l in locales { t[l] = text(max) }
        return .translations(t)
    }

    mutating func message() -> MessageInput {
        let pool = ["en", "de", "fr-CA", "pt_BR", "zh-Hant"]
        let locales: [String]? = bool() ? Array(pool.shuffled(using: &rng).prefix(int(1...4))) : nil
        var userInfo: JSONObject = [:]
        for _ in 0..<int(0...5) { userInfo[key()] = value(depth: 0) }
        let big = int(0...9) == 0
        let content = NotificationContent(
            title: localized(locales, max: 40),
            subtitle: bool() ? localized(locales, max: 40) : nil,
            body: localized(locales, max: big ? 3000 : 200),
            defaultLocale: locales?.first,
            sound: bool() ? text(10) : nil,
            badge: bool() ? Int32(int(0...999)) : nil,
            userInfo: userInfo,
            threadID: bool() ? text(10) : nil,
            imageURL: bool() ? "https://cdn.example.com/" + String(int(0...99999)) : nil,
            category: bool() ? text(10) : nil)
        return MessageInput(
            bundleID: "com.example.app", platform: .ios, content: content,
            priority: [nil, .low, .normal, .high][int(0...3)], ttlSeconds: bool() ? UInt32(int(0...2_419_200)) : nil,
            collapseID: bool() ? "c" + String(int(0...999)) : nil, idempotencyKey: text(20))
    }
}

@Suite("Property: rendered payloads parse back to the message")
struct PropertyTests {
    @Test("1000 random valid messages")
    func randomMessages() throws {
        var g = Generator(rng: SplitMix64(seed: 0x4845_5241_4C44))  // "HERALD"
        var rendered = 0, rejected = 0
        for _ in 0..<1000 {
            let input = g.message()
            let m = try Validator.validate(RenderInput(message: input), generateIdempotencyKey: { "unused" })
            let c = m.content
            let locales: [String?] = c.isTranslated ? c.locales : [nil]
            for locale in locales {
                let r: APNsRendering
                do {
                    r = try APNsRenderer.render(m, locale: locale, deviceToken: Fixtures.token, apnsID: Fixtures.apnsID, sendTime: Fixtures.now)
                } catch {
                    guard case .invalid(let e) = error, e.violations.first?.reason.contains("over APNs' 4096-byte limit") == true else {
                        Issue.record("unexpected error \(error)")
                        continue
                    }
                    rejected += 1
                    continue
                }
                rendered += 1
                #expect(r.payload.count <= 4096)
                let v = try JSONParser.parse(r.payload)
                let aps = try #require(v["aps"])
                #expect(aps["alert"]?["title"] == c.title.flatMap { $0.text(in: locale) }.map(JSONValue.string))
                #expect(aps["alert"]?["subtitle"] == c.subtitle.flatMap { $0.text(in: locale) }.map(JSONValue.string))
                #expect(aps["alert"]?["body"] == c.body.flatMap { $0.text(in: locale) }.map(JSONValue.string))
                #expect(aps["badge"] == c.badge.map { .number(Double($0)) })
                #expect(aps["sound"] == c.sound.map(JSONValue.string))
                #expect(aps["thread-id"] == c.threadID.map(JSONValue.string))
                #expect(aps["category"] == c.category.map(JSONValue.string))
                #expect(aps["mutable-content"] == c.imageURL.map { _ in 1 })
                #expect(v["ctx_image_url"] == c.imageURL.map(JSONValue.string))
                #expect(v["ctx_idempotency_key"] == .string(m.idempotencyKey))
                for (k, value) in c.userInfo { #expect(v[k] == value) }
                #expect(v.objectValue?.count == 1 + c.userInfo.count + 1 + (c.imageURL == nil ? 0 : 1))

                let f = try FCMRenderer.render(m, locale: locale, deviceToken: "t")
                let fv = try JSONParser.parse(f.body)
                for (k, value) in c.userInfo {
                    #expect(fv["message"]?["data"]?[k] == .string(FCMRenderer.dataString(value)))
                    if case .string = value {} else {
                        #expect(try JSONParser.parse(FCMRenderer.dataString(value)) == value)
                    }
                }
            }
        }
        #expect(rendered > 1000)
        #expect(rejected > 0)
    }
}
