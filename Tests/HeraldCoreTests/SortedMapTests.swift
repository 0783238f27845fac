@testable import HeraldPrimitives
import Testing

@Suite("SortedMap: key-sorted maps for JSON objects and translations")
struct SortedMapTests {
    /// UTF-8 byte order, not `String`'s: `B` (0x42) before `a`, a prefix
    /// before its extensions, `é` (0xC3 0xA9) after `z`.
    @Test func keysAreKeptInUTF8ByteOrder() {
        let map: SortedMap<Int> = ["z": 1, "é": 2, "a": 3, "B": 4, "ab": 5, "": 6, "a\u{0}": 7]
        #expect(map.keys == ["", "B", "a", "a\u{0}", "ab", "z", "é"])
        #expect(map.values == [6, 4, 3, 7, 5, 1, 2])
    }

    @Test func aRepeatedKeysLastValueWins() {
        let small = SortedMap([(key: "b", value: 1), (key: "a", value: 2), (key: "b", value: 3), (key: "a", value: 4), (key: "b", value: 5)])
        #expect(Array(small.keys) == ["a", "b"])
        #expect(small["a"] == 4 && small["b"] == 5)
        // Past the insertion-sort size: the stable index sort.
        var pairs: [(key: String, value: Int)] = (0..<40).map { ("k\(39 - $0)", $0) }
        pairs += (0..<40).map { ("k\($0 % 7)", 100 + $0) }
        let large = SortedMap(pairs)
        #expect(large.count == 40)
        #expect(large["k0"] == 135 && large["k6"] == 134 && large["k7"] == 32)
        #expect(zip(large, large.dropFirst()).allSatisfy { SortedMap<Int>.keyOrder($0.key, $1.key) })
    }

    @Test func subscriptSetInsertsReplacesAndRemovesInOrder() {
        var map: SortedMap<String> = [:]
        for key in ["m", "c", "x", "a", "q"] { map[key] = key.uppercased() }
        #expect(map.keys == ["a", "c", "m", "q", "x"])
        map["m"] = "again"
        map["c"] = nil
        map["absent"] = nil
        #expect(map.keys == ["a", "m", "q", "x"])
        #expect(map["m"] == "again" && map["c"] == nil && map["zz"] == nil)
    }

    /// Canonically equivalent spellings are different keys (byte equality),
    /// as protobuf map keys are; `Dictionary` would merge them.
    @Test func keysCompareByBytes() {
        let composed = "\u{E9}", decomposed = "e\u{301}"
        let map: SortedMap<Int> = [composed: 1, decomposed: 2]
        #expect(map.count == 2)
        #expect(map[composed] == 1 && map[decomposed] == 2)
        #expect(SortedMap<Int>([decomposed: 1]) != [composed: 1])
    }

    @Test func equalityAndHashIgnoreInsertionOrder() {
        let a: SortedMap<Int> = ["x": 1, "y": 2]
        var b: SortedMap<Int> = [:]
        b["y"] = 2
        b["x"] = 1
        #expect(a == b && a.hashValue == b.hashValue)
        b["x"] = 3
        #expect(a != b)
    }

    /// The writer writes members in the map's order; the parser keeps a
    /// repeated key's last value.
    @Test func writerAndParserAgreeWithTheOrder() throws {
        let parsed = try JSONParser.parse(Array(#"{"b":1,"a":{"z":true,"B":null},"b":2,"é":[]}"#.utf8))
        var w = JSONWriter()
        try w.write(parsed)
        #expect(String(decoding: w.finish(), as: UTF8.self) == #"{"a":{"B":null,"z":true},"b":2,"é":[]}"#)
    }
}
