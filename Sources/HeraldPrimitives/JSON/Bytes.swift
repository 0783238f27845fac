/// Runs `body` on the UTF-8 bytes of `s` without copying native strings.
@inlinable @inline(__always)
public func withBytes<R>(_ s: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
    if let r = try s.utf8.withContiguousStorageIfAvailable(body) { return r }
    var copy = s
    return try copy.withUTF8(body)
}

/// Runs `body` on the UTF-8 bytes of a substring.
@inlinable @inline(__always)
public func withBytes<R>(_ s: Substring, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
    if let r = try s.utf8.withContiguousStorageIfAvailable(body) { return r }
    var copy = s
    return try copy.withUTF8(body)
}

/// `s == literal` for an ASCII literal without `K`, `;` or `` ` `` (the only
/// ASCII characters another Unicode scalar is canonically equivalent to):
/// for such literals byte equality is exactly `String` equality, and much
/// cheaper than the general comparison.
@inlinable @inline(__always)
public func isLiteral(_ s: String, _ literal: StaticString) -> Bool {
    let n = literal.utf8CodeUnitCount
    guard s.utf8.count == n else { return false }
    return withBytes(s) { p in
        let l = literal.utf8Start
        var i = 0
        while i < n {
            if p[i] != l[i] { return false }
            i += 1
        }
        return true
    }
}
