import HeraldPrimitives
import Testing

/// Form/query decoding, hostile first: a cut or non-hex escape is refused
/// (nil), never guessed at; `+` is a space; any byte may be escaped (the
/// callers refuse NUL and bad UTF-8 themselves).
@Suite("FormURLDecoding")
struct FormURLDecodingTests {
    @Test(arguments: ["%", "%4", "a%zz", "%%41", "%g0", "%0"])
    func malformedEscapesAreRefused(_ text: String) {
        #expect(FormURLDecoding.bytes(Array(text.utf8)) == nil)
    }

    @Test func escapesPlusesAndPlainBytesDecode() {
        #expect(FormURLDecoding.bytes(Array("a+b%20c%2Bd%00%ff%C3%A9".utf8)) == Array("a b c+d".utf8) + [0, 0xFF, 0xC3, 0xA9])
        #expect(FormURLDecoding.bytes([UInt8]()) == [])
        #expect(FormURLDecoding.hexValue(UInt8(ascii: "F")) == 15)
        #expect(FormURLDecoding.hexValue(UInt8(ascii: "G")) == nil)
    }
}
