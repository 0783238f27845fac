import HeraldPrimitives
import Testing

/// Form/query decoding, hostile first: a cut or non-hex escape is refused
/// (nil), never guessed at; `+` is a space; any byte may be escaped (the
/// callers refuse NUL and bad UTF-8 themselves).
@Suite("PercentDecoding")
struct PercentDecodingTests {
    @Test(arguments: ["%", "%4", "a%zz", "%%41", "%g0", "%0"])
    func malformedEscapesAreRefused(_ text: String) {
        #expect(PercentDecoding.bytes(Array(text.utf8), plusIsSpace: true) == nil)
    }

    @Test func escapesPlusesAndPlainBytesDecode() {
        #expect(PercentDecoding.bytes(Array("a+b%20c%2Bd%00%ff%C3%A9".utf8), plusIsSpace: true) == Array("a b c+d".utf8) + [0, 0xFF, 0xC3, 0xA9])
        #expect(PercentDecoding.bytes(Array("a+b%20c%2Bd".utf8), plusIsSpace: false) == Array("a+b c+d".utf8))
        #expect(PercentDecoding.bytes([UInt8](), plusIsSpace: true) == [])
        #expect(PercentDecoding.hexValue(UInt8(ascii: "F")) == 15)
        #expect(PercentDecoding.hexValue(UInt8(ascii: "G")) == nil)
    }
}
