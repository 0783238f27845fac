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

    /// The order in which object keys are written: ascending UTF-8 bytes.
    @inline(__always)
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

    /// The first eight bytes of a key, big-endian and zero-padded: keys whose
    /// prefixes differ are ordered by them (``keyOrder``); equal prefixes
    /// need the full comparison.
    @inline(__always)
    static func keyPrefix(_ p: UnsafeBufferPointer<UInt8>) -> UInt64 {
        let n = p.count
        if n >= 8, let base = p.baseAddress {
            return UInt64(bigEndian: UnsafeRawPointer(base).loadUnaligned(as: UInt64.self))
        }
        var x: UInt64 = 0
        var i = 0
        while i < n {
            x |= UInt64(p[i]) &<< UInt64(56 &- 8 &* i)
            i += 1
        }
        return x
    }

    @inline(__always)
    static func keyPrefix(_ s: String) -> UInt64 {
        withBytes(s) { keyPrefix($0) }
    }

    /// Calls `body` for every entry of `o` in writing order (``keyOrder``)
    /// without copying the entries into an array: objects of up to eight
    /// members are sorted as (key prefix, index) pairs on the stack.
    @inline(__always)
    static func forEachSorted(
        _ o: [String: JSONValue], _ body: (String, JSONValue) throws(JSONEncodingError) -> Void
    ) throws(JSONEncodingError) {
        let n = o.count
        if n == 0 { return }
        if n == 1 {
            let (k, v) = o[o.startIndex]
            try body(k, v)
            return
        }
        if n == 2 {
            let i0 = o.startIndex
            let i1 = o.index(after: i0)
            if keyOrder(o.keys[i1], o.keys[i0]) {
                let (k, v) = o[i1]
                try body(k, v)
                let (k2, v2) = o[i0]
                try body(k2, v2)
            } else {
                let (k, v) = o[i0]
                try body(k, v)
                let (k2, v2) = o[i1]
                try body(k2, v2)
            }
            return
        }
        if n > 8 {
            var a = Array(o)
            sortPairs(&a)
            for (k, v) in a { try body(k, v) }
            return
        }
        typealias Slot = (prefix: UInt64, index: Dictionary<String, JSONValue>.Index)
        var slots: InlineArray<8, Slot> = .init(repeating: (0, o.startIndex))
        var count = 0
        var i = o.startIndex
        while i != o.endIndex {
            let p = keyPrefix(o.keys[i])
            // Insertion into the sorted prefix of `slots`.
            var j = count
            while j > 0 {
                let q = slots[j - 1].prefix
                if q < p || (q == p && !keyOrder(o.keys[i], o.keys[slots[j - 1].index])) { break }
                slots[j] = slots[j - 1]
                j -= 1
            }
            slots[j] = (p, i)
            count += 1
            i = o.index(after: i)
        }
        var k = 0
        while k < count {
            let (key, value) = o[slots[k].index]
            try body(key, value)
            k += 1
        }
    }

    /// Objects up to this size are sorted by insertion (no closure or
    /// generic-sort overhead); larger ones by the standard library's
    /// O(n log n) sort — an insertion sort of a client's 10,000-key
    /// `user_info` would cost 50 million comparisons.
    static let insertionSortLimit = 16

    /// Sorts pairs by key in writing order, in place.
    public static func sortPairs(_ a: inout [(key: String, value: JSONValue)]) {
        sortPairs(&a, by: keyOrder)
    }

    /// ``sortPairs(_:)`` with the comparison passed in (tests count calls).
    @inline(__always)
    static func sortPairs(_ a: inout [(key: String, value: JSONValue)], by less: (String, String) -> Bool) {
        if a.count <= 1 { return }
        guard a.count <= insertionSortLimit else {
            a.sort { less($0.key, $1.key) }
            return
        }
        var i = 1
        while i < a.count {
            var j = i
            while j > 0 && less(a[j].key, a[j - 1].key) {
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
    public mutating func writeObject(_ o: [String: JSONValue]) throws(JSONEncodingError) {
        put(UInt8(ascii: "{"))
        var first = true
        try Self.forEachSorted(o) { (k, v) throws(JSONEncodingError) in
            writeKey(k, first: first)
            first = false
            try write(v)
        }
        put(UInt8(ascii: "}"))
    }

    /// Writes a value, spelling non-finite numbers as `null` (for diagnostics).
    mutating func writeLenient(_ value: JSONValue) {
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
            for (i, (k, v)) in Self.sortedPairs(o).enumerated() {
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

    /// Copies `count` bytes and returns true when none needs escaping (see
    /// ``firstSpecial(_:from:)``); false as soon as one might (the copy is
    /// then incomplete). Eight bytes a step; the last partial word is done
    /// with an overlapping load, and 4–7 byte strings with two overlapping
    /// 4-byte loads, so only strings under four bytes go byte by byte.
    @inline(__always)
    static func copyIfPlain(from src: UnsafePointer<UInt8>, to dst: UnsafeMutablePointer<UInt8>, count n: Int) -> Bool {
        let s = UnsafeRawPointer(src)
        let d = UnsafeMutableRawPointer(dst)
        if n >= 8 {
            var i = 0
            while i + 8 <= n {
                let w = s.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                if mayNeedEscape(w) { return false }
                d.storeBytes(of: w, toByteOffset: i, as: UInt64.self)
                i += 8
            }
            if i < n {
                let w = s.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
                if mayNeedEscape(w) { return false }
                d.storeBytes(of: w, toByteOffset: n - 8, as: UInt64.self)
            }
            return true
        }
        if n >= 4 {
            let lo = s.loadUnaligned(as: UInt32.self)
            let hi = s.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self)
            if mayNeedEscape(UInt64(lo) | UInt64(hi) &<< 32) { return false }
            d.storeBytes(of: lo, as: UInt32.self)
            d.storeBytes(of: hi, toByteOffset: n - 4, as: UInt32.self)
            return true
        }
        var i = 0
        while i < n {
            let c = src[i]
            if c < 0x20 || c == 0x22 || c == 0x5C || c == 0xE2 { return false }
            dst[i] = c
            i += 1
        }
        return true
    }

    /// Whether any of the eight bytes of `w` may be below 0x20, `"`, `\\`
    /// or 0xE2 (never false when one is; rarely true when none is).
    @inline(__always)
    static func mayNeedEscape(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let below20 = (w &- ones &* 0x20) & ~w
        let q = w ^ (ones &* 0x22)
        let bs = w ^ (ones &* 0x5C)
        let e2 = w ^ (ones &* 0xE2)
        return (below20 | ((q &- ones) & ~q) | ((bs &- ones) & ~bs) | ((e2 &- ones) & ~e2)) & highs != 0
    }

    /// The index of the first byte at or after `from` that needs a look:
    /// below 0x20, `"`, `\\`, or 0xE2 (the lead byte of U+2028/U+2029).
    /// Scans eight bytes at a time (SWAR); the per-word test may report a
    /// word without such a byte (never the reverse), which the byte loop
    /// then simply passes over.
    @inline(__always)
    static func firstSpecial(_ buf: UnsafeBufferPointer<UInt8>, from: Int) -> Int {
        let n = buf.count
        var i = from
        if let base = buf.baseAddress {
            let raw = UnsafeRawPointer(base)
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            while i + 8 <= n {
                let w = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                let below20 = (w &- ones &* 0x20) & ~w
                let q = w ^ (ones &* 0x22)
                let bs = w ^ (ones &* 0x5C)
                let e2 = w ^ (ones &* 0xE2)
                let hits = (below20 | ((q &- ones) & ~q) | ((bs &- ones) & ~bs) | ((e2 &- ones) & ~e2)) & highs
                if hits != 0 { break }
                i += 8
            }
        }
        while i < n {
            let c = buf[i]
            if c < 0x20 || c == 0x22 || c == 0x5C || c == 0xE2 { return i }
            i += 1
        }
        return n
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
