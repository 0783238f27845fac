/// Why a value cannot be written as JSON.
public enum JSONEncodingError: Error, Sendable, Hashable {
    /// NaN or an infinity: JSON has no spelling for them.
    case nonFiniteNumber(Double)
}

/// A compact, deterministic JSON writer that appends UTF-8 straight into a
/// byte buffer.
///
/// Output rules (stable, so equal inputs give equal bytes on every machine):
/// - No whitespace.
/// - Object keys of a ``JSONValue/object(_:)`` are written in ascending byte
///   order of their UTF-8 form (``keyOrder``). Rendered payloads that need a
///   specific order (e.g. `aps` first) are written key by key by the renderers.
/// - Strings: `"` and `\` escaped; control characters as `\b \f \n \r \t` or
///   `\u00XX`; U+2028 and U+2029 as `\u2028`/`\u2029` (they break JavaScript
///   string literals); everything else, including non-ASCII, verbatim UTF-8.
/// - Numbers: integral values with magnitude below 1e16 as plain integers
///   (`3.0` → `3`, `-0.0` → `0`, 2^53 → `9007199254740992`); other values in
///   Swift's shortest round-tripping form (`0.1`, `1e+16`, `1e+21`,
///   `1.5e-07`), which is valid JSON.
///   NaN and infinities are rejected.
public struct JSONWriter: Sendable {
    // A zero-filled array used as a raw buffer: bytes are stored through its
    // unsafe buffer pointer and `count` tracks the end, which is much cheaper
    // than `Array.append` for many small runs.
    @usableFromInline var storage: [UInt8]
    /// The number of bytes written.
    public private(set) var count: Int

    /// Creates a writer with room for `capacity` bytes (it grows as needed).
    public init(capacity: Int = 512) {
        storage = [UInt8](repeating: 0, count: Swift.max(capacity, 16))
        count = 0
    }

    /// The bytes written so far (a copy; setting replaces them, so
    /// `writer.bytes.append(…)` works, if not on the hot path).
    public var bytes: [UInt8] {
        get { Array(storage[0..<count]) }
        set {
            storage = newValue
            count = newValue.count
        }
    }

    /// The bytes written, without copying; the writer is used up.
    public consuming func finish() -> [UInt8] {
        storage.removeLast(storage.count - count)
        return storage
    }

    /// The bytes written so far as a `String`.
    public var string: String { String(decoding: storage[0..<count], as: UTF8.self) }

    @inline(__always)
    mutating func reserve(_ extra: Int) {
        if count + extra > storage.count { grow(extra) }
    }

    @inline(never)
    mutating func grow(_ extra: Int) {
        storage.append(contentsOf: repeatElement(0, count: Swift.max(storage.count, extra)))
    }

    /// Appends one byte.
    @inline(__always)
    mutating func put(_ b: UInt8) {
        reserve(1)
        let i = count
        storage.withUnsafeMutableBufferPointer { $0[i] = b }
        count = i + 1
    }

    /// Appends raw bytes.
    @inline(__always)
    mutating func put(_ src: UnsafeBufferPointer<UInt8>) {
        let n = src.count
        guard n > 0 else { return }
        reserve(n)
        let i = count
        storage.withUnsafeMutableBufferPointer { dst in
            (dst.baseAddress.unsafelyUnwrapped + i).update(from: src.baseAddress.unsafelyUnwrapped, count: n)
        }
        count = i + n
    }

    /// Appends a slice of a buffer.
    @inline(__always)
    mutating func put(_ src: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) {
        put(UnsafeBufferPointer(rebasing: src[range]))
    }

    /// Writes a value compactly (sorted object keys).
    public mutating func write(_ value: JSONValue) throws(JSONEncodingError) {
        switch value {
        case .null: writeRaw("null")
        case .bool(let b): writeRaw(b ? "true" : "false")
        case .number(let n): try writeNumber(n)
        case .string(let s): writeString(s)
        case .array(let a):
            put(UInt8(ascii: "["))
            var first = true
            for v in a {
                if !first { put(UInt8(ascii: ",")) }
                first = false
                try write(v)
            }
            put(UInt8(ascii: "]"))
        case .object(let o):
            try writeObject(o)
        }
    }

    /// Writes an object compactly, keys in ``keyOrder``.
    public mutating func writeObject(_ o: JSONObject) throws(JSONEncodingError) {
        put(UInt8(ascii: "{"))
        var first = true
        for (k, v) in o {
            writeKey(k, first: first)
            first = false
            try write(v)
        }
        put(UInt8(ascii: "}"))
    }

    /// Writes a value, spelling non-finite numbers as `null` (for diagnostics).
    public mutating func writeLenient(_ value: JSONValue) {
        switch value {
        case .number(let n) where !n.isFinite:
            writeRaw("null")
        case .array(let a):
            put(UInt8(ascii: "["))
            for (i, v) in a.enumerated() {
                if i > 0 { put(UInt8(ascii: ",")) }
                writeLenient(v)
            }
            put(UInt8(ascii: "]"))
        case .object(let o):
            put(UInt8(ascii: "{"))
            for (i, (k, v)) in o.enumerated() {
                if i > 0 { put(UInt8(ascii: ",")) }
                writeString(k)
                put(UInt8(ascii: ":"))
                writeLenient(v)
            }
            put(UInt8(ascii: "}"))
        default:
            try? write(value)
        }
    }

    /// Appends ASCII text verbatim (punctuation, literals).
    public mutating func writeRaw(_ s: StaticString) {
        s.withUTF8Buffer { put($0) }
    }

    /// Appends `,` (when `comma`) and ASCII text verbatim, in one store.
    @inline(__always)
    public mutating func writeRaw(_ s: StaticString, comma: Bool) {
        let n = s.utf8CodeUnitCount
        let c = comma ? 1 : 0
        reserve(n + c)
        let i = count
        storage.withUnsafeMutableBufferPointer { dst in
            let d = dst.baseAddress.unsafelyUnwrapped + i
            if comma { d[0] = UInt8(ascii: ",") }
            (d + c).update(from: s.utf8Start, count: n)
        }
        count = i + n + c
    }

    /// Appends one byte verbatim.
    public mutating func writeByte(_ b: UInt8) { put(b) }

    /// Writes a quoted, escaped JSON string.
    public mutating func writeString(_ s: String) {
        withBytes(s) { buf in
            let n = buf.count
            // Optimistic: quote, then copy and scan in one pass (eight bytes a
            // step), closing quote. If a byte needs a look, the
            // copied bytes are simply overwritten by the escaping path.
            reserve(n + 2)
            let i = count
            let clean = storage.withUnsafeMutableBufferPointer { dst -> Bool in
                let d = dst.baseAddress.unsafelyUnwrapped + i
                d[0] = UInt8(ascii: "\"")
                if n > 0, !Self.copyIfPlain(from: buf.baseAddress.unsafelyUnwrapped, to: d + 1, count: n) {
                    return false
                }
                d[n + 1] = UInt8(ascii: "\"")
                return true
            }
            if clean {
                count = i + n + 2
            } else {
                put(UInt8(ascii: "\""))
                appendEscaped(buf)
                put(UInt8(ascii: "\""))
            }
        }
    }

    /// Writes an object member's key: `,` (unless `first`), the quoted key
    /// and `:`, in one store when the key needs no escaping.
    @inline(__always)
    public mutating func writeKey(_ k: String, first: Bool) {
        let done = withBytes(k) { buf -> Bool in
            let n = buf.count
            let c = first ? 0 : 1
            reserve(n + 3 + c)
            let i = count
            let ok = storage.withUnsafeMutableBufferPointer { dst -> Bool in
                let d = dst.baseAddress.unsafelyUnwrapped + i
                if c == 1 { d[0] = UInt8(ascii: ",") }
                d[c] = UInt8(ascii: "\"")
                if n > 0, !Self.copyIfPlain(from: buf.baseAddress.unsafelyUnwrapped, to: d + c + 1, count: n) {
                    return false
                }
                d[c + n + 1] = UInt8(ascii: "\"")
                d[c + n + 2] = UInt8(ascii: ":")
                return true
            }
            if ok { count = i + c + n + 3 }
            return ok
        }
        if !done {
            if !first { put(UInt8(ascii: ",")) }
            writeString(k)
            put(UInt8(ascii: ":"))
        }
    }

    @inline(__always)
    private mutating func appendEscaped(_ buf: UnsafeBufferPointer<UInt8>) {
        let n = buf.count
        var runStart = 0
        var i = 0
        while true {
            i = Self.firstSpecial(buf, from: i)
            if i == n { break }
            let c = buf[i]
            if c == 0xE2 {
                if i + 2 < n && buf[i + 1] == 0x80 && (buf[i + 2] == 0xA8 || buf[i + 2] == 0xA9) {
                    if runStart < i { put(buf, runStart..<i) }
                    writeRaw(buf[i + 2] == 0xA8 ? "\\u2028" : "\\u2029")
                    i += 3
                    runStart = i
                } else {
                    i += 1
                }
                continue
            }
            if runStart < i { put(buf, runStart..<i) }
            switch c {
            case 0x22: writeRaw("\\\"")
            case 0x5C: writeRaw("\\\\")
            case 0x08: writeRaw("\\b")
            case 0x0C: writeRaw("\\f")
            case 0x0A: writeRaw("\\n")
            case 0x0D: writeRaw("\\r")
            case 0x09: writeRaw("\\t")
            default:
                writeRaw("\\u00")
                put(Self.hexDigits[Int(c >> 4)])
                put(Self.hexDigits[Int(c & 0xF)])
            }
            i += 1
            runStart = i
        }
        if runStart < n { put(buf, runStart..<n) }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Writes a number (see the type's rules); throws for NaN and infinities.
    public mutating func writeNumber(_ n: Double) throws(JSONEncodingError) {
        guard n.isFinite else { throw .nonFiniteNumber(n) }
        // Truncating conversion and compare instead of `rounded()`: no libm
        // (this module links no C libraries).
        let i = n.magnitude < 1e16 ? Int64(n) : 0
        if n.magnitude < 1e16 && Double(i) == n {
            writeInteger(i)
        } else if n.magnitude >= 0.1 && n.magnitude < 1e14, let m = Self.tenths(n) {
            // One decimal digit (42.5, -0.5): within this range the values
            // that round to `n` span less than 0.1, so `m / 10` is the only
            // one-digit decimal among them and no integer is: it is Swift's
            // shortest round-tripping spelling, in plain notation.
            if m < 0 { put(UInt8(ascii: "-")) }
            writeUnsigned(m.magnitude / 10)
            put(UInt8(ascii: "."))
            put(UInt8(truncatingIfNeeded: m.magnitude % 10) &+ 0x30)
        } else {
            // Swift's description is the shortest round-tripping form, and its
            // spellings (`1e+21`, `5e-324`, `0.1`) are all valid JSON numbers.
            var d = n.description
            d.withUTF8 { put($0) }
        }
    }

    /// `n × 10` when that is an integer `m` and `m / 10` rounds to exactly
    /// `n` (so `n`'s nearest one-decimal spelling reads back as `n`).
    @inline(__always)
    static func tenths(_ n: Double) -> Int64? {
        let t = n * 10
        let m = Int64(t)
        guard Double(m) == t, Double(m) / 10 == n else { return nil }
        return m
    }

    /// Writes a signed integer in decimal.
    public mutating func writeInteger(_ v: Int64) {
        if v < 0 {
            put(UInt8(ascii: "-"))
            writeUnsigned(v.magnitude)
        } else {
            writeUnsigned(UInt64(v))
        }
    }

    /// Writes an unsigned integer in decimal.
    public mutating func writeUnsigned(_ v: UInt64) {
        if v < 10 {
            put(UInt8(truncatingIfNeeded: v) &+ 0x30)
            return
        }
        var tmp: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes ≥ 20 digits
        var v = v
        withUnsafeMutableBytes(of: &tmp) { raw in
            var i = raw.count
            while v > 0 {
                i -= 1
                raw[i] = UInt8(truncatingIfNeeded: v % 10) &+ 0x30
                v /= 10
            }
            put(UnsafeBufferPointer(start: raw.baseAddress!.assumingMemoryBound(to: UInt8.self) + i, count: raw.count - i))
        }
    }
}
