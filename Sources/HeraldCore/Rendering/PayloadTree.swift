import HeraldPrimitives

/// An insertion-ordered JSON object used while building platform payloads,
/// so rendered keys come out in a fixed, meaningful order (`aps` first, then
/// user data, then Herald's `ctx_` keys), and overrides can be deep-merged.
struct OrderedObject: Sendable {
    enum Node: Sendable {
        case leaf(JSONValue)
        case object(OrderedObject)
    }

    struct Entry: Sendable {
        var key: String
        /// nil once removed: entries keep their places, so positions in
        /// ``positions`` stay valid without shifting the array.
        var node: Node?
    }

    private(set) var entries: [Entry] = []
    /// Key → place in ``entries``, built once the object outgrows a linear
    /// scan: a client's `android` override can add thousands of keys, and
    /// looking each up by scanning would cost quadratic time.
    private var positions: [String: Int]?

    /// Objects this small are searched by scanning (no hashing).
    static let linearScanLimit = 8

    init(capacity: Int = 0) {
        if capacity > 0 { entries.reserveCapacity(capacity) }
    }

    @inline(__always)
    mutating func append(_ key: String, _ value: JSONValue) {
        append(Entry(key: key, node: .leaf(value)))
    }

    @inline(__always)
    mutating func append(_ key: String, _ object: OrderedObject) {
        append(Entry(key: key, node: .object(object)))
    }

    private mutating func append(_ entry: Entry) {
        entries.append(entry)
        if positions != nil {
            positions![entry.key] = entries.count - 1
        } else if entries.count > Self.linearScanLimit {
            var index: [String: Int] = [:]
            index.reserveCapacity(entries.count * 2)
            for (i, e) in entries.enumerated() where e.node != nil { index[e.key] = i }
            positions = index
        }
    }

    func index(of key: String) -> Int? {
        if let positions { return positions[key] }
        return entries.firstIndex { $0.node != nil && $0.key == key }
    }

    /// Removes and returns the entry for `key`.
    mutating func remove(_ key: String) -> Node? {
        guard let i = index(of: key) else { return nil }
        positions?[key] = nil
        defer { entries[i].node = nil }
        return entries[i].node
    }

    /// Deep-merges `patch` (keys in byte order): objects merge recursively,
    /// `null` removes the key (as in JSON Merge Patch, RFC 7396), anything
    /// else replaces the value in place or is appended.
    mutating func merge(_ patch: JSONObject) {
        for (key, value) in patch {
            merge(key: key, value: value)
        }
    }

    mutating func merge(key: String, value: JSONValue) {
        guard let i = index(of: key) else {
            if case .null = value { return }
            append(Entry(key: key, node: .leaf(value)))
            return
        }
        if case .null = value {
            _ = remove(key)
            return
        }
        switch (entries[i].node, value) {
        case (.object(var existing)?, .object(let patch)):
            entries[i].node = .leaf(.null)  // drop the reference so `existing` is unique
            existing.merge(patch)
            entries[i].node = .object(existing)
        case (.leaf(.object(let existing))?, .object(let patch)):
            entries[i].node = .leaf(.object(Self.mergeDictionaries(existing, patch)))
        default:
            entries[i].node = .leaf(value)
        }
    }

    static func mergeDictionaries(_ base: JSONObject, _ patch: JSONObject) -> JSONObject {
        // Both are sorted: one linear merge, whatever their sizes.
        var out: [(key: String, value: JSONValue)] = []
        out.reserveCapacity(base.count + patch.count)
        var i = 0, j = 0
        while i < base.count || j < patch.count {
            if j == patch.count || (i < base.count && JSONWriter.keyOrder(base[i].key, patch[j].key)) {
                out.append(base[i])
                i += 1
            } else if i == base.count || JSONWriter.keyOrder(patch[j].key, base[i].key) {
                if case .null = patch[j].value {} else { out.append(patch[j]) }
                j += 1
            } else {  // the same key in both
                switch (base[i].value, patch[j].value) {
                case (_, .null): break
                case (.object(let b), .object(let p)): out.append((patch[j].key, .object(mergeDictionaries(b, p))))
                default: out.append(patch[j])
                }
                i += 1
                j += 1
            }
        }
        return JSONObject(out)
    }

    /// Writes the object compactly, in entry order.
    func write(to w: inout JSONWriter) throws(JSONEncodingError) {
        w.writeByte(UInt8(ascii: "{"))
        var first = true
        for e in entries {
            guard let node = e.node else { continue }
            if !first { w.writeByte(UInt8(ascii: ",")) }
            first = false
            w.writeString(e.key)
            w.writeByte(UInt8(ascii: ":"))
            switch node {
            case .leaf(let v): try w.write(v)
            case .object(let o): try o.write(to: &w)
            }
        }
        w.writeByte(UInt8(ascii: "}"))
    }
}
