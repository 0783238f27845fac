import HeraldPrimitives
import Testing

@testable import HeraldClient

/// Flag values beyond ArgumentParser's parsing: hostile first.
@Suite struct ClientInputTests {
    @Test(arguments: ["", " ", "\n", "a b", "tab\tin", "bell\u{7}", "nul\0x", "ünïcode", "del\u{7F}", String(repeating: "t", count: 4097)])
    func refusesTokensThatAreNotOnePrintableASCIIWord(_ contents: String) {
        #expect(throws: ClientFailure.self) { try ClientInput.token(contents, source: "HERALD_TOKEN") }
    }

    @Test func aTokenIsTheFirstLineTrimmed() throws {
        #expect(try ClientInput.token("secret-1\n", source: "f") == "secret-1")
        #expect(try ClientInput.token("  secret-1 \r\nsecond line ignored", source: "f") == "secret-1")
        #expect(try ClientInput.token(String(repeating: "t", count: 4096), source: "f").count == 4096)
        do {
            _ = try ClientInput.token("two words", source: "--token-file /x")
        } catch {
            #expect(error.exitCode == 1 && error.message.contains("--token-file /x"))
            #expect(!error.message.contains("two words"), "a token is never echoed")
        }
    }

    @Test(arguments: ["de", "=Hallo", "", "Hallo"])
    func refusesTranslationsWithoutLocale(_ item: String) {
        #expect(throws: ClientFailure.self) { try ClientInput.localizedText(plain: nil, translations: [item], flag: "--title-in") }
    }

    @Test func refusesALocaleGivenTwice() {
        #expect(throws: ClientFailure.self) {
            try ClientInput.localizedText(plain: nil, translations: ["de=a", "de=b"], flag: "--title-in")
        }
    }

    @Test func translationsKeepEverythingAfterTheFirstEquals() throws {
        #expect(try ClientInput.localizedText(plain: nil, translations: ["de=a=b", "en="], flag: "--t") == .message([
            ("translations", .list([
                .message([("key", .string("de")), ("value", .string("a=b"))]),
                .message([("key", .string("en")), ("value", .string(""))]),
            ])),
        ]))
        #expect(try ClientInput.localizedText(plain: "x", translations: [], flag: "--t") == .message([("text", .string("x"))]))
        #expect(try ClientInput.localizedText(plain: nil, translations: [], flag: "--t") == nil)
    }

    @Test(arguments: ["", "{", "[]", "1", "\"x\"", "null", "{\"a\":}", String(repeating: "[", count: 300)])
    func refusesJSONThatIsNotAnObject(_ text: String) {
        #expect(throws: ClientFailure.self) { try ClientInput.jsonObject(text, flag: "--ios") }
    }

    @Test func timesAreSecondsFromNowOrPassedThrough() throws {
        #expect(try ClientInput.time("60", flag: "--after", nowMilliseconds: 0).hasPrefix("1970-01-01T00:01:00"))
        #expect(try ClientInput.time("-1.5", flag: "--after", nowMilliseconds: 10_000).hasPrefix("1970-01-01T00:00:08.5"))
        #expect(try ClientInput.time("2026-11-28T10:00:00+01:00", flag: "--after", nowMilliseconds: 0) == "2026-11-28T10:00:00+01:00")
        #expect(throws: ClientFailure.self) { try ClientInput.time("1e300", flag: "--after", nowMilliseconds: 0) }
        #expect(throws: ClientFailure.self) { try ClientInput.time("nan", flag: "--after", nowMilliseconds: 0) }
        #expect(throws: ClientFailure.self) { try ClientInput.time("inf", flag: "--after", nowMilliseconds: 0) }
    }
}
