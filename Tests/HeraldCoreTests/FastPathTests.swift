@testable import HeraldPrimitives
import Testing
@testable import HeraldCore

/// The byte-level fast paths agree with the straightforward definitions.
@Suite("Fast paths")
struct FastPathTests {
    /// The documented escaping rules, byte by byte.
    static func referenceJSONString(_ s: String) -> [UInt8] {
        var out: [UInt8] = [0x22]
        let u = Array(s.utf8)
        var i = 0
        while i < u.count {
            let c = u[i]
            switch c {
            case 0x22: out += Array("\\\"".utf8)
            case 0x5C: out += Array("\\\\".utf8)
            case 0x08: out += Array("\\b".utf8)
            case 0x0C: out += Array("\\f".utf8)
            case 0x0A: out += Array("\\n".utf8)
            case 0x0D: out += Array("\\r".utf8)
            case 0x09: out += Array("\\t".utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += Array("\\u00".utf8) + [hex[Int(c >> 4)], hex[Int(c & 0xF)]]
            case 0xE2 where i + 2 < u.count && u[i + 1] == 0x80 && (u[i + 2] == 0xA8 || u[i + 2] == 0xA9):
                out += Array((u[i + 2] == 0xA8 ? "\\u2028" : "\\u2029").utf8)
                i += 2
            default:
                out.append(c)
            }
            i += 1
        }
        out.append(0x22)
        return out
    }

    @Test("writeString matches the escaping rules for every length and position")
    func strings() {
        let specials: [String] = ["\"", "\\", "\n", "\u{01}", "\u{1F}", "\u{2028}", "\u{2029}", "\u{2027}", "é", "€", "😀", " ", "\u{7F}"]
        var generator = SystemRandomNumberGenerator()
        for length in 0...40 {
            let plain = String(repeating: "a", count: length)
            var w = JSONWriter(capacity: 4)
            w.writeString(plain)
            #expect(w.bytes == Self.referenceJSONString(plain))
            for position in 0...length {
                for special in specials {
                    var chars = Array(plain)
                    chars.insert(contentsOf: special, at: position)
                    let s = String(chars)
                    var w = JSONWriter(capacity: 4)
                    w.writeRaw("x")
                    w.writeString(s)
                    #expect(w.bytes == [UInt8(ascii: "x")] + Self.referenceJSONString(s), "\(s.debugDescription)")
                }
            }
            // Random mixes, to cover several specials in one word.
            for _ in 0..<20 {
                let s = String((0..<length).map { _ in (specials + ["b", "c", "d"]).randomElement(using: &generator)!.first! })
                var w = JSONWriter(capacity: 1)
                w.writeString(s)
                #expect(w.bytes == Self.referenceJSONString(s), "\(s.debugDescription)")
            }
        }
    }

    @Test("hex token check equals the per-byte definition")
    func hexTokens() {
        func isHex(_ c: UInt8) -> Bool {
            (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66)
        }
        for position in [0, 3, 7, 8, 15, 31, 63, 64, 65] {
            for c in UInt8(1)...0x7F {
                var bytes = Array(repeating: UInt8(ascii: "a"), count: 66)
                bytes[position] = c
                let token = String(decoding: bytes, as: UTF8.self)
                let problem = Validator.deviceTokenProblem(token, platform: .ios)
                #expect((problem == "an APNs device token must be hexadecimal") == !isHex(c), "byte \(c) at \(position)")
            }
            let accented = String(repeating: "a", count: position) + "é" + String(repeating: "a", count: max(0, 64 - position))
            #expect(Validator.deviceTokenProblem(accented, platform: .ios) == "an APNs device token must be hexadecimal")
        }
    }

    @Test("header values format like String(_:)")
    func headerValues() {
        for v: Int64 in [0, 1, 9, 10, 99, 100, 1_767_229_200, 9_999_999_999, Int64.max, -1, -1_767_229_200, Int64.min] {
            #expect(APNsExpiration(rawValue: v).description == String(v))
        }
        for p in [0, 1, 2, 5, 10, 11, -1] {
            #expect(APNsPriority(rawValue: p).description == String(p))
        }
    }

    @Test("numbers are written as Swift's shortest round-tripping form")
    func numbers() throws {
        var generator = SystemRandomNumberGenerator()
        var values: [Double] = [0.1, 0.5, 0.9, 1.5, 42.5, -42.5, -0.1, 0.05, 0.15, 0.3, 0.1 + 0.2, 19.99, 1e13 + 0.5, 1e14 - 0.5,
                                1e14 + 0.5, 99_999_999_999_999.9, 2.5e-5, 123_456.789, 1e15 + 0.5]
        for m in stride(from: -200_000, through: 200_000, by: 7) { values.append(Double(m) / 10) }
        for _ in 0..<20_000 {
            let m = Int64.random(in: -1_000_000_000_000_000...1_000_000_000_000_000, using: &generator)
            values.append(Double(m) / 10)
            values.append(Double(m) / 100)
            values.append(Double.random(in: -1e6...1e6, using: &generator))
            values.append(Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &generator)))
        }
        for v in values where v.isFinite {
            var w = JSONWriter()
            try w.writeNumber(v)
            let i = v.magnitude < 1e16 ? Int64(v) : 0
            let expected = v.magnitude < 1e16 && Double(i) == v ? String(i) : v.description
            #expect(w.string == expected, "\(v)")
        }
    }

    @Test("isLiteral equals String ==")
    func literals() {
        let candidates = ["aps", "APS", "ap", "apss", "", "enabled", "enable", "enabled ", "alert", "\u{212A}", "a\u{301}ps", "aps\u{301}", "title", "tıtle"]
        for s in candidates {
            #expect(isLiteral(s, "aps") == (s == "aps"))
            #expect(isLiteral(s, "enabled") == (s == "enabled"))
            #expect(isLiteral(s, "alert") == (s == "alert"))
            #expect(isLiteral(s, "title") == (s == "title"))
        }
    }

    @Test("objects are written in byte order of their keys")
    func objectOrder() throws {
        let keys = ["", "a", "a\u{0}", "ab", "abcdefgh", "abcdefgh\u{0}", "abcdefghi", "abcdefgg", "B", "é", "ü", "z", "zz", "abcdefghij", "abcdefghia",
                    "k1", "k2", "k3"]
        var object: [String: JSONValue] = [:]
        for (i, k) in keys.enumerated() { object[k] = .number(Double(i)) }
        for count in 1...keys.count {
            let sub = Dictionary(uniqueKeysWithValues: object.prefix(count).map { ($0.key, $0.value) })
            var w = JSONWriter()
            try w.write(.object(JSONObject(sub)))
            var expected = "{"
            let sorted = sub.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            for (i, k) in sorted.enumerated() {
                if i > 0 { expected += "," }
                expected += String(decoding: Self.referenceJSONString(k), as: UTF8.self) + ":" + String(Int(sub[k]!.numberValue!))
            }
            expected += "}"
            #expect(w.string == expected)
        }
    }
}
