/// A map from `String` keys to values, kept as one array sorted by the keys'
/// UTF-8 bytes (``keyOrder(_:_:)``): the order JSON objects are written in.
///
/// It stands in for `[String: Value]` where maps are small and built once
/// (a text's translations, a JSON object): no hashing, one allocation,
/// iteration already in writing order, look-up by binary search.
///
/// Keys are compared byte for byte: two keys that are canonically equivalent
/// but spelled differently (`"é"` and `"e\u{301}"`) are two keys here,
/// where `Dictionary` would merge them. Setting a key that is present
/// replaces its value (a repeated key's last value wins).
@frozen
public struct SortedMap<Value> {
    /// The entries, keys strictly ascending in ``keyOrder(_:_:)``.
    @usableFromInline var entries: [(key: String, value: Value)]

    /// An empty map.
    @inlinable public init() { entries = [] }

    /// An empty map with room for `minimumCapacity` entries.
    @inlinable public init(minimumCapacity: Int) {
        entries = []
        entries.reserveCapacity(minimumCapacity)
    }

    /// A map of `pairs` in any order; where a key repeats, its last value wins.
    @inlinable public init(_ pairs: [(key: String, value: Value)]) {
        entries = pairs
        Self.sortAndDeduplicate(&entries)
    }

    /// The entries of `dictionary`.
    @inlinable public init(_ dictionary: [String: Value]) {
        self.init(dictionary.map { (key: $0.key, value: $0.value) })
    }

    /// The order of keys: ascending UTF-8 bytes (a shorter key before the
    /// longer keys it is a prefix of).
    @inlinable @inline(__always)
    public static func keyOrder(_ a: String, _ b: String) -> Bool {
        withBytes(a) { pa in withBytes(b) { pb in compare(pa, pb) < 0 } }
    }

    /// -1, 0 or 1 as `a` sorts before, equal to or after `b`.
    @inlinable @inline(__always)
    static func compare(_ pa: UnsafeBufferPointer<UInt8>, _ pb: UnsafeBufferPointer<UInt8>) -> Int {
        let n = Swift.min(pa.count, pb.count)
        var i = 0
        while i < n {
            let x = pa[i], y = pb[i]
            if x != y { return x < y ? -1 : 1 }
            i &+= 1
        }
        return pa.count == pb.count ? 0 : (pa.count < pb.count ? -1 : 1)
    }

    /// The index of `key`, or where it would be inserted (`found` false).
    @inlinable
    func search(_ key: String) -> (index: Int, found: Bool) {
        withBytes(key) { k in
            var low = 0
            var high = entries.count
            while low < high {
                let mid = (low &+ high) &>> 1
                let c = withBytes(entries[mid].key) { Self.compare($0, k) }
                if c == 0 { return (mid, true) }
                if c < 0 { low = mid &+ 1 } else { high = mid }
            }
            return (low, false)
        }
    }

    /// The value for `key`; setting nil removes the key.
    @inlinable public subscript(key: String) -> Value? {
        get {
            let (index, found) = search(key)
            return found ? entries[index].value : nil
        }
        set {
            let (index, found) = search(key)
            switch (found, newValue) {
            case (true, let value?): entries[index].value = value
            case (true, nil): entries.remove(at: index)
            case (false, let value?): entries.insert((key, value), at: index)
            case (false, nil): break
            }
        }
    }

    /// The keys, ascending.
    @inlinable public var keys: [String] { entries.map(\.key) }

    /// The values, in key order.
    @inlinable public var values: [Value] { entries.map(\.value) }

    /// The same keys with transformed values.
    @inlinable public func mapValues<T, E: Error>(_ transform: (Value) throws(E) -> T) throws(E) -> SortedMap<T> {
        var result = SortedMap<T>(minimumCapacity: entries.count)
        for (key, value) in entries { result.entries.append((key, try transform(value))) }
        return result
    }

    /// Sorts `pairs` by key, stably, and keeps the last of each run of equal
    /// keys. Already-sorted input (the common case) costs one pass.
    @inlinable
    static func sortAndDeduplicate(_ pairs: inout [(key: String, value: Value)]) {
        let n = pairs.count
        if n < 2 { return }
        var sorted = true
        var i = 1
        while i < n {
            if !keyOrder(pairs[i - 1].key, pairs[i].key) { sorted = false; break }
            i &+= 1
        }
        if sorted { return }
        if n <= 16 {
            // Insertion sort: stable, no closure, fine for the usual handful.
            i = 1
            while i < n {
                var j = i
                while j > 0 && keyOrder(pairs[j].key, pairs[j - 1].key) {
                    pairs.swapAt(j, j - 1)
                    j &-= 1
                }
                i &+= 1
            }
        } else {
            // Stable by construction: equal keys ordered by original position.
            var order = Array(0..<n)
            order.sort { a, b in
                let c = withBytes(pairs[a].key) { pa in withBytes(pairs[b].key) { pb in compare(pa, pb) } }
                return c != 0 ? c < 0 : a < b
            }
            pairs = order.map { pairs[$0] }
        }
        // Keep the last of each run of equal keys.
        var write = 0
        i = 1
        while i < n {
            if keyOrder(pairs[write].key, pairs[i].key) { write &+= 1 }
            if write != i { pairs.swapAt(write, i) }
            i &+= 1
        }
        pairs.removeLast(n - write - 1)
    }
}

extension SortedMap: RandomAccessCollection {
    public typealias Element = (key: String, value: Value)
    public typealias Index = Int
    @inlinable public var startIndex: Int { 0 }
    @inlinable public var endIndex: Int { entries.count }
    @inlinable public subscript(position: Int) -> (key: String, value: Value) { entries[position] }
    @inlinable public var count: Int { entries.count }
    @inlinable public var isEmpty: Bool { entries.isEmpty }
}

extension SortedMap: ExpressibleByDictionaryLiteral {
    /// A literal's pairs; a repeated key's last value wins.
    @inlinable public init(dictionaryLiteral elements: (String, Value)...) {
        self.init(elements.map { (key: $0.0, value: $0.1) })
    }
}

extension SortedMap: Equatable where Value: Equatable {
    @inlinable public static func == (a: Self, b: Self) -> Bool {
        guard a.entries.count == b.entries.count else { return false }
        for i in a.entries.indices {
            let sameKey = withBytes(a.entries[i].key) { pa in withBytes(b.entries[i].key) { compare(pa, $0) == 0 } }
            if !sameKey || a.entries[i].value != b.entries[i].value { return false }
        }
        return true
    }
}

extension SortedMap: Hashable where Value: Hashable {
    @inlinable public func hash(into hasher: inout Hasher) {
        hasher.combine(entries.count)
        for (key, value) in entries {
            hasher.combine(key)
            hasher.combine(value)
        }
    }
}

extension SortedMap: Sendable where Value: Sendable {}

extension SortedMap: CustomStringConvertible {
    public var description: String {
        entries.isEmpty ? "[:]" : "[" + entries.map { "\(String(reflecting: $0.key)): \($0.value)" }.joined(separator: ", ") + "]"
    }
}
