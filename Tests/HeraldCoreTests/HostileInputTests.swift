@testable import HeraldPrimitives
import Testing
@testable import HeraldCore

/// Requests shaped by an attacker: huge objects, many locales, long strings
/// echoed in errors. Each test checks a structural property (the result at
/// a scale a quadratic algorithm could not reach in a test run, or a count
/// of operations), never a duration.
@Suite("Hostile input")
struct HostileInputTests {
    // MARK: Quoting client input

    @Test func quoteKeepsShortInputAndCutsLongInputAtACharacterBoundary() {
        #expect(ErrorText.quote("de-CH") == "\"de-CH\"")
        let long = String(repeating: "x", count: 17_000)
        #expect(ErrorText.quote(long) == "\"" + String(repeating: "x", count: 64) + "…\"")
        // 63 ASCII bytes then a 2-byte character: cutting at 64 would split it.
        let split = String(repeating: "a", count: 63) + "éé"
        #expect(ErrorText.truncated(split) == String(repeating: "a", count: 63) + "…")
        #expect(ErrorText.truncated(String(repeating: "😀", count: 40)) == String(repeating: "😀", count: 16) + "…")
    }

    @Test func errorsListAtMostTenViolations() {
        let violations = (0..<500).map { FieldViolation(field: "f\($0)", reason: "bad") }
        let text = ValidationError(violations).description
        #expect(text.hasSuffix("; and 490 more"))
        #expect(text.utf8.count < 300)
    }

    @Test func echoedLocalesAndTagsAreTruncated() {
        let huge = "de-" + String(repeating: "x", count: 17_000)
        let render = RenderInput(message: Fixtures.message(), locale: huge, deviceToken: nil)
        #expect(throws: ValidationError.self) { try Validator.validate(render, generateIdempotencyKey: { "k" }) }
        do {
            _ = try Validator.validate(render, generateIdempotencyKey: { "k" })
        } catch {
            #expect(error.description.utf8.count < 300)
            #expect(error.description.contains("locale"))
        }
        let content = Fixtures.content(
            title: .translations([huge: "a", "en": "b"]), body: .translations([huge: "c", "en": "d"]), defaultLocale: huge + "y")
        var v: [FieldViolation] = []
        Validator.checkContent(content, into: &v)
        #expect(!v.isEmpty)
        #expect(ValidationError(v).description.utf8.count < 600)
        #expect(v.allSatisfy { $0.field.utf8.count < 120 && $0.reason.utf8.count < 250 })
    }

    // MARK: Linear costs

    /// An object's 100,000 keys in scrambled order, each twice: sorted
    /// (n log n: an insertion sort would take billions of moves, far past the
    /// time limit) with the last value of each repeated key kept.
    @Test(.timeLimit(.minutes(1)))
    func sortingAnObjectsKeysKeepsTheLastOfRepeatedKeys() {
        let n = 100_000
        var pairs: [(key: String, value: JSONValue)] = (0..<n).map { ("k\(($0 &* 7919) % n)", .bool(false)) }
        pairs += (0..<n).map { ("k\(($0 &* 104_729) % n)", .number(Double($0))) }
        let object = JSONObject(pairs)
        #expect(object.count == n)
        #expect(zip(object, object.dropFirst()).allSatisfy { JSONWriter.keyOrder($0.key, $1.key) })
        #expect(object.allSatisfy { $0.value.numberValue != nil })
        #expect(object["k0"] == .number(0))
    }

    @Test func mergingAHundredThousandKeysIsCorrect() throws {
        let n = 100_000
        var patch: [String: JSONValue] = [:]
        for i in 0..<n { patch["k\(i)"] = .number(Double(i)) }
        patch["priority"] = "HIGH"   // replaces in place
        patch["ttl"] = nil
        var android = OrderedObject(capacity: 2)
        android.append("priority", .string("NORMAL"))
        android.append("ttl", .string("60s"))
        android.merge(JSONObject(patch))
        android.merge(["k5": .null, "ttl": .null, "new": ["a": 1]])
        android.merge(["new": ["b": 2]])
        var w = JSONWriter()
        try android.write(to: &w)
        guard case .object(let out) = try Fixtures.parse(w.finish()) else { Issue.record("not an object"); return }
        #expect(out.count == n - 1 + 2)  // k5 and ttl deleted; priority and new added
        #expect(out["priority"] == "HIGH")
        #expect(out["ttl"] == nil && out["k5"] == nil)
        #expect(out["k99999"] == .number(99_999))
        #expect(out["new"] == ["a": 1, "b": 2])
        #expect(android.entries.first?.key == "priority")
    }

    @Test func fcmRenderingMergesAHugeAndroidOverride() throws {
        var overrides: [String: JSONValue] = ["collapse_key": "c"]
        for i in 0..<50_000 { overrides["x\(i)"] = .bool(true) }
        let message = try Fixtures.validated(Fixtures.message(platform: .android, android: JSONObject(overrides)))
        let rendering = try FCMRenderer.render(message, locale: nil, deviceToken: "t")
        let android = try Fixtures.parse(rendering.body)["message"]?["android"]?.objectValue
        #expect(android?.count == 50_000 + 3)  // priority, ttl, collapse_key
        #expect(android?["x49999"] == true)
    }

    @Test func thousandsOfLocalesAreComparedAsSets() {
        let n = 50_000
        var title: [String: String] = [:]
        var body: [String: String] = [:]
        for i in 0..<n {
            title["l\(i)"] = "t"
            body[i == 7 ? "L7" : "l\(i)"] = "b"  // same tag, other spelling
        }
        #expect(Validator.sameLocaleSet(SortedMap(title), SortedMap(body)))
        body["l8"] = nil
        body["l\(n)"] = "b"
        #expect(!Validator.sameLocaleSet(SortedMap(title), SortedMap(body)))

        title["L9"] = "dup"  // the same tag as l9
        var v: [FieldViolation] = []
        Validator.checkTranslations(SortedMap(title), "content.title", into: &v)
        #expect(v.count == 1)
        #expect(v.first?.reason == "locales L9 and l9 are the same tag")
    }

    /// Sizes derived from the first locale's rendering match full renders.
    @Test(arguments: [false, true])
    func payloadSizesOfEveryLocaleMatchFullRenders(patchTitle: Bool) throws {
        var title: [String: String] = [:]
        var body: [String: String] = [:]
        for i in 0..<60 {
            title["l\(i)"] = String(repeating: "\u{1}\"é", count: i * 20)
            body["l\(i)"] = String(repeating: "b", count: (59 - i) * 80 + 1)
        }
        title["l0"] = "t"
        let ios: JSONObject? = patchTitle ? ["aps": ["alert": ["title": "fixed"]]] : nil
        let content = Fixtures.content(title: .translations(SortedMap(title)), body: .translations(SortedMap(body)), defaultLocale: "l0")
        let message = try Fixtures.validated(Fixtures.message(content: content, ios: ios))
        let end = Fixtures.now.adding(seconds: 3600)
        let derived = APNsRenderer.payloadSizeViolations(message, handoffWindowEnd: end)
        var full: [FieldViolation] = []
        for locale in message.content.locales {
            for handoff in [nil, end] {
                let size = try APNsRenderer.unchecked(message, locale: locale, handoffWindowEnd: handoff).count
                do {
                    try APNsRenderer.checkSize(size, message, locale: locale, handoff: handoff != nil)
                } catch {
                    if case .invalid(let e) = error { full += e.violations }
                    break  // as the validator does: the handoff is checked when the alert fits
                }
            }
        }
        #expect(!derived.isEmpty)
        #expect(Set(derived) == Set(full))
        #expect(derived.count == full.count)
    }

    @Test func nonFinitePathsTruncateKeys() {
        let key = String(repeating: "k", count: 5_000)
        let value: JSONValue = .object([key: .array([1, .number(.infinity)])])
        #expect(value.firstNonFiniteNumberPath(prefix: "content.user_info") == "content.user_info." + String(repeating: "k", count: 64) + "…[1]")
    }
}
