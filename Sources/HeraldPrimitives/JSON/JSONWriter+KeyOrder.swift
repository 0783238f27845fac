/// Object keys in writing order: ascending UTF-8 bytes, compared by an
/// eight-byte prefix first.
extension JSONWriter {
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
    @inlinable @inline(__always)
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

    @inlinable @inline(__always)
    static func keyPrefix(_ s: String) -> UInt64 {
        withBytes(s) { keyPrefix($0) }
    }

    /// Calls `body` for every entry of `o` in writing order (``keyOrder``)
    /// without copying the entries into an array: objects of up to eight
    /// members are sorted as (key prefix, index) pairs on the stack.
    @inlinable @inline(__always)
    public static func forEachSorted(
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
}
