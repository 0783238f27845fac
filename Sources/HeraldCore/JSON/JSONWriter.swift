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
    /// The bytes written so far.
    public var bytes: [UInt8]

    /// Creates a writer with room for `capacity` bytes.
    public init(capacity: Int = 512) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// The bytes written so far as a `String`.
    public var string: String { String(decoding: bytes, as: UTF8.self) }

    /// The order in which object keys are written: ascending UTF-8 bytes.
    public static func keyOrder(_ a: String, _ b: String) -> Bool {
        withBytes(a) { pa in
            withBytes(b) { pb in
                let n = Swift.min(pa.count, pb.count)
                var i = 0
                while i < n {
                    let x = pa[i], y = pb[i]
                    if x != y { return x < y }
                    i += 1
                }
                return pa.count < pb.count
            }
        }
    }

    /// The entries of an object in writing order (no per-key lookups).
    public static func sortedPairs(_ o: [String: JSONValue]) -> [(key: String, value: JSONValue)] {
        var a = Array(o)
        sortPairs(&a)
        return a
    }

    /// Sorts pairs by key in writing order, in place.
    public static func sortPairs(_ a: inout [(key: String, value: JSONValue)]) {
        if a.count <= 1 { return }
        // Insertion sort: objects here are small, and this avoids the
        // generic stable sort's overhead.
        var i = 1
        while i < a.count {
            var j = i
            while j > 0 && keyOrder(a[j].key, a[j - 1].key) {
                a.swapAt(j, j - 1)
                j -= 1
            }
            i += 1
        }
    }

    /// Writes a value compactly (sorted object keys).
    public mutating func write(_ value: JSONValue) throws(JSONEncodingError) {
        switch value {
        case .null: writeRaw("null")
        case .bool(let b): writeRaw(b ? "true" : "false")
        case .number(let n): try writeNumber(n)
        case .string(let s): writeString(s)
        case .array(let a):
            bytes.append(UInt8(ascii: "["))
            var first = true
            for v in a {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                try write(v)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let o):
            bytes.append(UInt8(ascii: "{"))
            var first = true
            for (k, v) in Self.sortedPairs(o) {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                writeString(k)
                bytes.append(UInt8(ascii: ":"))
                try write(v)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Writes a value, spelling non-finite numbers as `null` (for diagnostics).
    mutating func writeLenient(_ value: JSONValue) {
        switch value {
        case .number(let n) where !n.isFinite:
            writeRaw("null")
        case .array(let a):
            bytes.append(UInt8(ascii: "["))
            for (i, v) in a.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                writeLenient(v)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let o):
            bytes.append(UInt8(ascii: "{"))
            for (i, (k, v)) in Self.sortedPairs(o).enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(k)
                bytes.append(UInt8(ascii: ":"))
                writeLenient(v)
            }
            bytes.append(UInt8(ascii: "}"))
        default:
            try? write(value)
        }
    }

    /// The keys of an object in writing order.
    @inlinable
    static func sortedKeys(_ o: [String: JSONValue]) -> [String] {
        if o.count <= 1 { return Array(o.keys) }
        return o.keys.sorted(by: keyOrder)
    }

    /// Appends ASCII text verbatim (punctuation, literals).
    @inlinable
    public mutating func writeRaw(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Appends one byte verbatim.
    @inlinable
    public mutating func writeByte(_ b: UInt8) { bytes.append(b) }

    /// Writes a quoted, escaped JSON string.
    public mutating func writeString(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        withBytes(s) { appendEscaped($0) }
        bytes.append(UInt8(ascii: "\""))
    }

    @inline(__always)
    private mutating func appendEscaped(_ buf: UnsafeBufferPointer<UInt8>) {
        var runStart = 0
        var i = 0
        let n = buf.count
        while i < n {
            let c = buf[i]
            // Fast test: everything at or above 0x20 except `"`, `\` and 0xE2
            // (the lead byte of U+2028/U+2029) is copied as is.
            if c >= 0x20 && c != 0x22 && c != 0x5C && c != 0xE2 {
                i += 1
                continue
            }
            if c == 0xE2 {
                if i + 2 < n && buf[i + 1] == 0x80 && (buf[i + 2] == 0xA8 || buf[i + 2] == 0xA9) {
                    if runStart < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buf[runStart..<i])) }
                    writeRaw(buf[i + 2] == 0xA8 ? "\\u2028" : "\\u2029")
                    i += 3
                    runStart = i
                } else {
                    i += 1
                }
                continue
            }
            if runStart < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buf[runStart..<i])) }
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
                bytes.append(Self.hexDigits[Int(c >> 4)])
                bytes.append(Self.hexDigits[Int(c & 0xF)])
            }
            i += 1
            runStart = i
        }
        if runStart < n { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buf[runStart..<n])) }
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
        } else {
            // Swift's description is the shortest round-tripping form, and its
            // spellings (`1e+21`, `5e-324`, `0.1`) are all valid JSON numbers.
            var d = n.description
            d.withUTF8 { bytes.append(contentsOf: $0) }
        }
    }

    /// Writes a signed integer in decimal.
    public mutating func writeInteger(_ v: Int64) {
        if v < 0 {
            bytes.append(UInt8(ascii: "-"))
            writeUnsigned(v.magnitude)
        } else {
            writeUnsigned(UInt64(v))
        }
    }

    /// Writes an unsigned integer in decimal.
    public mutating func writeUnsigned(_ v: UInt64) {
        if v < 10 {
            bytes.append(UInt8(truncatingIfNeeded: v) &+ 0x30)
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
            bytes.append(contentsOf: raw[i...])
        }
    }
}
