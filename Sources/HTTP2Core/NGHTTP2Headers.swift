package import CInterop

/// Header lists as `nghttp2_nv` arrays.
public enum NGHTTP2Headers {
    /// Calls `body` with an `nghttp2_nv` array for `headers` (names lowercase).
    /// nghttp2 copies the array on submit, so it only lives for the call.
    /// The bytes and the array are temporary allocations (on the stack when
    /// small): no heap allocation per header list.
    package static func with<R>(
        _ headers: [(name: String, value: String)],
        _ body: (UnsafePointer<nghttp2_nv>, Int) -> R
    ) -> R {
        var total = 1  // never empty, so the base address exists
        for header in headers { total += header.name.utf8.count + header.value.utf8.count }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: total) { storage in
            withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(headers.count, 1)) { list in
                var offset = 0
                for (index, header) in headers.enumerated() {
                    let name = copy(header.name, into: storage, at: &offset)
                    let value = copy(header.value, into: storage, at: &offset)
                    (list.baseAddress! + index).initialize(to: nghttp2_nv(
                        name: name, value: value, namelen: header.name.utf8.count, valuelen: header.value.utf8.count,
                        flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)))
                }
                defer { list.baseAddress!.deinitialize(count: headers.count) }
                return body(UnsafePointer(list.baseAddress!), headers.count)
            }
        }
    }

    /// Copies `text`'s UTF-8 into `storage` at `offset` (advanced past it); returns where it starts.
    private static func copy(
        _ text: String, into storage: UnsafeMutableBufferPointer<UInt8>, at offset: inout Int
    ) -> UnsafeMutablePointer<UInt8> {
        let start = storage.baseAddress! + offset
        let copied = text.utf8.withContiguousStorageIfAvailable { utf8 in
            if let source = utf8.baseAddress { start.initialize(from: source, count: utf8.count) }
            return utf8.count
        }
        if let copied {
            offset += copied
        } else {
            for byte in text.utf8 {
                storage[offset] = byte
                offset += 1
            }
        }
        return start
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
