package import CInterop

/// Header lists as `nghttp2_nv` arrays.
public enum NGHTTP2Headers {
    /// Calls `body` with an `nghttp2_nv` array for `headers` (names lowercase).
    /// nghttp2 copies the array on submit, so it only lives for the call.
    package static func with<R>(
        _ headers: [(name: String, value: String)],
        _ body: (UnsafePointer<nghttp2_nv>, Int) -> R
    ) -> R {
        var storage: [UInt8] = []
        storage.reserveCapacity(headers.reduce(1) { $0 + $1.name.utf8.count + $1.value.utf8.count })
        var ranges: [(Int, Int, Int, Int)] = []
        ranges.reserveCapacity(headers.count)
        for header in headers {
            let nameStart = storage.count
            storage.append(contentsOf: header.name.utf8)
            let valueStart = storage.count
            storage.append(contentsOf: header.value.utf8)
            ranges.append((nameStart, valueStart - nameStart, valueStart, storage.count - valueStart))
        }
        storage.append(0)  // never empty, so the base address exists
        return storage.withUnsafeMutableBufferPointer { bytes in
            let base = bytes.baseAddress!
            var nva = ranges.map { range in
                nghttp2_nv(
                    name: base + range.0, value: base + range.2,
                    namelen: range.1, valuelen: range.3, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            var empty = nghttp2_nv()
            return nva.withUnsafeMutableBufferPointer { list in
                body(UnsafePointer(list.baseAddress ?? withUnsafeMutablePointer(to: &empty) { $0 }), list.count)
            }
        }
    }
}

/// Whether a header name or value from an event equals `literal` (bytewise).
@inlinable @inline(__always)
public func bytesEqual(_ bytes: UnsafeRawBufferPointer, _ literal: StaticString) -> Bool {
    guard bytes.count == literal.utf8CodeUnitCount else { return false }
    let pointer = literal.utf8Start
    for index in 0..<bytes.count where bytes[index] != pointer[index] { return false }
    return true
}
