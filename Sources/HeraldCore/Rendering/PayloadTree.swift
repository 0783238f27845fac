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
        var node: Node
    }

    var entries: [Entry] = []

    init(capacity: Int = 0) {
        if capacity > 0 { entries.reserveCapacity(capacity) }
    }

    @inline(__always)
    mutating func append(_ key: String, _ value: JSONValue) {
        entries.append(Entry(key: key, node: .leaf(value)))
    }

    @inline(__always)
    mutating func append(_ key: String, _ object: OrderedObject) {
        entries.append(Entry(key: key, node: .object(object)))
    }

    func index(of key: String) -> Int? {
        entries.firstIndex { $0.key == key }
    }

    /// Removes and returns the entry for `key`.
    mutating func remove(_ key: String) -> Node? {
        guard let i = index(of: key) else { return nil }
        return entries.remove(at: i).node
    }

    /// Deep-merges `patch` (keys in byte order): objects merge recursively,
    /// `null` removes the key (as in JSON Merge Patch, RFC 7396), anything
    /// else replaces the value in place or is appended.
    mutating func merge(_ patch: [String: JSONValue]) {
        for (key, value) in JSONWriter.sortedPairs(patch) {
            merge(key: key, value: value)
        }
    }

    mutating func merge(key: String, value: JSONValue) {
        guard let i = index(of: key) else {
            if case .null = value { return }
            entries.append(Entry(key: key, node: .leaf(value)))
            return
        }
        if case .null = value {
            entries.remove(at: i)
            return
        }
        switch (entries[i].node, value) {
        case (.object(var existing), .object(let patch)):
            entries[i].node = .leaf(.null)  // drop the reference so `existing` is unique
            existing.merge(patch)
            entries[i].node = .object(existing)
        case (.leaf(.object(let existing)), .object(let patch)):
            entries[i].node = .leaf(.object(Self.mergeDictionaries(existing, patch)))
        default:
            entries[i].node = .leaf(value)
        }
    }

    static func mergeDictionaries(_ base: [String: JSONValue], _ patch: [String: JSONValue]) -> [String: JSONValue] {
        var out = base
        for (k, v) in patch {
            switch (out[k], v) {
            case (_, .null): out[k] = nil
            case (.object(let b)?, .object(let p)): out[k] = .object(mergeDictionaries(b, p))
            default: out[k] = v
            }
        }
        return out
    }

    /// Writes the object compactly, in entry order.
    func write(to w: inout JSONWriter) throws(JSONEncodingError) {
        w.writeByte(UInt8(ascii: "{"))
        var first = true
        for e in entries {
            if !first { w.writeByte(UInt8(ascii: ",")) }
            first = false
            w.writeString(e.key)
            w.writeByte(UInt8(ascii: ":"))
            switch e.node {
            case .leaf(let v): try w.write(v)
            case .object(let o): try o.write(to: &w)
            }
        }
        w.writeByte(UInt8(ascii: "}"))
    }
}
