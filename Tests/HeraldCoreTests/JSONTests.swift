@testable import HeraldPrimitives
import Testing
@testable import HeraldCore

@Suite("JSON writer and parser")
struct JSONTests {
    static let escapes: [(String, String)] = [
        ("plain", #""plain""#),
        ("quote \" here", #""quote \" here""#),
        ("back\\slash", #""back\\slash""#),
        ("line\nfeed", #""line\nfeed""#),
        ("tab\there", #""tab\there""#),
        ("cr\r bs\u{08} ff\u{0C}", #""cr\r bs\b ff\f""#),
        ("nul\u{00} unit\u{1F}", #""nul\u0000 unit\u001f""#),
        ("del\u{7F}", "\"del\u{7F}\""),
        ("slash /", #""slash /""#),
        ("ls\u{2028}ps\u{2029}", #""ls\u2028ps\u2029""#),
        ("ümlaut 日本 🎉", "\"ümlaut 日本 🎉\""),
        ("\u{2027}\u{202A}", "\"\u{2027}\u{202A}\""),
        ("", #""""#),
    ]

    @Test("string escaping", arguments: escapes)
    func escaping(input: String, expected: String) throws {
        var w = JSONWriter()
        w.writeString(input)
        #expect(w.string == expected)
        #expect(try JSONParser.parse(w.bytes) == .string(input))
    }

    static let numbers: [(Double, String)] = [
        (0, "0"), (-0.0, "0"), (3.0, "3"), (-17, "-17"), (42.5, "42.5"), (0.1, "0.1"),
        (1e15, "1000000000000000"), (9_007_199_254_740_991, "9007199254740991"),
        (9_007_199_254_740_992, "9007199254740992"), (9_999_999_999_999_998, "9999999999999998"),
        (1e16, "1e+16"), (-1e16, "-1e+16"), (1.2345678901234568e20, "1.2345678901234568e+20"), (1e21, "1e+21"), (1e-7, "1e-07"),
        (-2.5e-300, "-2.5e-300"), (Double(Int32.max), "2147483647"),
    ]

    @Test("number formatting", arguments: numbers)
    func numberFormatting(value: Double, expected: String) throws {
        var w = JSONWriter()
        try w.write(.number(value))
        #expect(w.string == expected)
        #expect(try JSONParser.parse(w.bytes) == .number(value == 0 ? 0 : value))
    }

    @Test("NaN and infinities are rejected", arguments: [Double.nan, .infinity, -.infinity])
    func nonFinite(value: Double) {
        var w = JSONWriter()
        #expect(throws: JSONEncodingError.self) { try w.write(.array([.number(value)])) }
    }

    @Test("object keys are written in byte order")
    func keyOrder() throws {
        let v: JSONValue = ["b": 1, "a": ["z": true, "y": nil], "B": "x", "é": 2, "aa": []]
        var w = JSONWriter()
        try w.write(v)
        #expect(w.string == #"{"B":"x","a":{"y":null,"z":true},"aa":[],"b":1,"é":2}"#)
    }

    @Test("Struct-like values round-trip")
    func roundTrip() throws {
        let v: JSONValue = [
            "s": "text \u{1F600} \"q\"", "n": -12.75, "i": 7, "b": false, "null": nil,
            "arr": [1, "two", [3], ["four": 4]], "obj": ["nested": ["deep": [true, false]]],
        ]
        var w = JSONWriter()
        try w.write(v)
        #expect(try JSONParser.parse(w.bytes) == v)
        #expect(try JSONParser.parse(w.string) == v)
    }

    static let validDocuments: [(String, JSONValue)] = [
        (" { \"a\" : [ 1 , 2.5e1 , -0.5E-1 ] } ", ["a": [1, 25, -0.05]]),
        (#""\u00e9\ud83d\ude00\/""#, .string("é😀/")),
        ("true", true), ("null", nil), ("[]", []), ("{}", [:]),
        (#"{"a":1,"a":2}"#, ["a": 2]),
    ]

    @Test("parser accepts valid documents", arguments: validDocuments)
    func parseValid(text: String, expected: JSONValue) throws {
        #expect(try JSONParser.parse(text) == expected)
    }

    static let invalidDocuments = [
        "", "{", "[1,]", "{\"a\":}", "01", "1.", ".5", "+1", "-", "1e", "tru", "nul",
        "\"unterminated", "\"bad \\x escape\"", "\"ctrl \u{01}\"", "{\"a\" 1}", "[1 2]",
        "\"\\ud800\"", "\"\\udc00\"", "1e999", "{} x", "{1:2}",
        String(repeating: "[", count: 300) + String(repeating: "]", count: 300),
    ]

    @Test("parser rejects invalid documents", arguments: invalidDocuments)
    func parseInvalid(text: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(text) }
    }

    @Test("parser rejects invalid UTF-8")
    func invalidUTF8() {
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xFF, 0x22] as [UInt8]) }
    }

    @Test("non-finite numbers are found by path")
    func nonFinitePath() {
        let v: JSONValue = ["a": ["b": [1, .number(.nan)]]]
        #expect(v.firstNonFiniteNumberPath(prefix: "x") == "x.a.b[1]")
        #expect(JSONValue.object(["a": 1]).firstNonFiniteNumberPath(prefix: "x") == nil)
    }
}

@Suite("Byte scanning (SWAR)")
struct ByteScanTests {
    static let uppercase: [(String, Bool)] = [
        ("", false), ("abcdef0123456789", false), ("@[`{@[`{@[`{@[`{", false),
        ("ÀÉÎÕÜàéîõü", false), ("abcdefgA", true), ("Zbcdefgh", true), ("abcdefghijklmnopM", true),
        (String(repeating: "ab", count: 32), false), (String(repeating: "ab", count: 31) + "Ab", true),
    ]

    @Test("uppercase detection", arguments: uppercase)
    func detectsUppercase(s: String, expected: Bool) {
        #expect(APNsRenderer.hasUppercase(s) == expected)
    }

    @Test("escape scan finds the first special byte at every offset")
    func specialAtEveryOffset() {
        for special in ["\"", "\\", "\n", "\u{1F}", "\u{2028}", "€"] {
            for offset in 0..<20 {
                let s = String(repeating: "a", count: offset) + special + "zzzzzzzzz"
                let bytes = Array(s.utf8)
                let found = bytes.withUnsafeBufferPointer { JSONWriter.firstSpecial($0, from: 0) }
                #expect(found == offset, "special \(special.debugDescription) at \(offset)")
            }
        }
    }
}

@Suite("JSONWriter buffer")
struct JSONWriterBufferTests {
    @Test("grows past its initial capacity and keeps bytes appended through `bytes`")
    func grows() throws {
        var w = JSONWriter(capacity: 4)
        let long = String(repeating: "x\u{1}", count: 100)
        try w.write(.array([.string(long), 1]))
        w.bytes.append(UInt8(ascii: "\n"))
        w.writeByte(UInt8(ascii: "!"))
        #expect(w.count == 2 + 100 * 7 + 4 + 1 + 1)
        #expect(w.string.hasSuffix("]\n!"))
        let out = w.finish()
        #expect(out.count == 2 + 100 * 7 + 4 + 1 + 1)
    }
}
