import CInterop
import NIOCore

/// Helpers around an nghttp2 session in memory mode, shared by the APNs
/// client and the simulator.
public enum NGHTTP2 {
    /// Calls `body` with an `nghttp2_nv` array for `headers` (names lowercase).
    /// nghttp2 copies the array on submit, so it only lives for the call.
    public static func withHeaders<R>(
        _ headers: [(name: String, value: String)],
        _ body: (UnsafePointer<nghttp2_nv>, Int) -> R
    ) -> R {
        var storage: [UInt8] = []
        storage.reserveCapacity(headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count })
        var ranges: [(Int, Int, Int, Int)] = []
        ranges.reserveCapacity(headers.count)
        for header in headers {
            let nameStart = storage.count
            storage.append(contentsOf: header.name.utf8)
            let valueStart = storage.count
            storage.append(contentsOf: header.value.utf8)
            ranges.append((nameStart, valueStart - nameStart, valueStart, storage.count - valueStart))
        }
        return storage.withUnsafeMutableBufferPointer { bytes in
            let base = bytes.baseAddress ?? UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
            var nva = ranges.map { range in
                nghttp2_nv(
                    name: base + range.0, value: base + range.2,
                    namelen: range.1, valuelen: range.3, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return nva.withUnsafeMutableBufferPointer { body(UnsafePointer($0.baseAddress!), $0.count) }
        }
    }

    /// Appends everything the session wants to send to `buffer`.
    /// Returns false on a fatal nghttp2 error.
    @discardableResult
    public static func drain(_ session: OpaquePointer, into buffer: inout ByteBuffer) -> Bool {
        var rounds = 0
        while rounds < 1_000_000 {
            rounds += 1
            var data: UnsafePointer<UInt8>?
            let length = nghttp2_session_mem_send(session, &data)
            if length < 0 { return false }
            if length == 0 { return true }
            if let data { buffer.writeBytes(UnsafeRawBufferPointer(start: data, count: length)) }
        }
        return true
    }

    /// Feeds received plaintext to the session. Returns nghttp2's error text on failure.
    public static func receive(_ session: OpaquePointer, _ buffer: ByteBuffer) -> String? {
        buffer.withUnsafeReadableBytes { raw -> String? in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            let result = nghttp2_session_mem_recv(session, base, raw.count)
            if result < 0 { return String(cString: nghttp2_strerror(Int32(result))) }
            return nil
        }
    }

    /// A string from an nghttp2 (pointer, length) pair.
    @inline(__always)
    public static func string(_ pointer: UnsafePointer<UInt8>?, _ length: Int) -> String {
        guard let pointer else { return "" }
        return String(decoding: UnsafeBufferPointer(start: pointer, count: length), as: UTF8.self)
    }

    /// True when the session has nothing left to read or write (close it).
    public static func isFinished(_ session: OpaquePointer) -> Bool {
        nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0
    }
}
