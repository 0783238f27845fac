import CInterop
import HTTP2Core
import NIOCore

/// Helpers around an nghttp2 session in memory mode, shared by the APNs
/// client and the simulator.
public enum NGHTTP2 {
    /// Calls `body` with an `nghttp2_nv` array for `headers` (see `NGHTTP2Headers.with`).
    public static func withHeaders<R>(
        _ headers: [(name: String, value: String)],
        _ body: (UnsafePointer<nghttp2_nv>, Int) -> R
    ) -> R {
        NGHTTP2Headers.with(headers, body)
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
