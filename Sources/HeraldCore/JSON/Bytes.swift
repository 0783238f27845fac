/// Runs `body` on the UTF-8 bytes of `s` without copying native strings.
@inline(__always)
func withBytes<R>(_ s: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
    if let r = try s.utf8.withContiguousStorageIfAvailable(body) { return r }
    var copy = s
    return try copy.withUTF8(body)
}

/// Runs `body` on the UTF-8 bytes of a substring.
@inline(__always)
func withBytes<R>(_ s: Substring, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
    if let r = try s.utf8.withContiguousStorageIfAvailable(body) { return r }
    var copy = s
    return try copy.withUTF8(body)
}
