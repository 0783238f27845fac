public import HeraldPrimitives

extension JSONValue {
    /// The first path (e.g. `a.b[2]`) below `self` holding a NaN or infinite
    /// number, or nil when the value is representable in JSON. Keys in the
    /// path are truncated (``ErrorText``): they are client input.
    public func firstNonFiniteNumberPath(prefix: String) -> String? {
        guard containsNonFiniteNumber else { return nil }
        return nonFinitePath(prefix: prefix)
    }

    /// One depth-first pass (no `containsNonFiniteNumber` per level, which
    /// would rescan every subtree once per level above it).
    private func nonFinitePath(prefix: String) -> String? {
        switch self {
        case .number(let n):
            return n.isFinite ? nil : prefix
        case .array(let a):
            for (i, v) in a.enumerated() where v.mayContainNumber {
                if let p = v.nonFinitePath(prefix: "\(prefix)[\(i)]") { return p }
            }
            return nil
        case .object(let o):
            for (k, v) in o where v.mayContainNumber {
                if let p = v.nonFinitePath(prefix: prefix + "." + ErrorText.truncated(k)) { return p }
            }
            return nil
        default:
            return nil
        }
    }
}
