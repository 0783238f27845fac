package import CInterop
import HTTP2Core
import NIOCore

/// Small nghttp2 helpers kept for callers outside HTTP2Core; sessions
/// themselves are `HTTP2Core.HTTP2Session`.
public enum NGHTTP2 {
    /// Calls `body` with an `nghttp2_nv` array for `headers` (see `NGHTTP2Headers.with`).
    package static func withHeaders<R>(
        _ headers: [(name: String, value: String)],
        _ body: (UnsafePointer<nghttp2_nv>, Int) -> R
    ) -> R {
        NGHTTP2Headers.with(headers, body)
    }

    /// A string from an nghttp2 (pointer, length) pair.
    @inline(__always)
    public static func string(_ pointer: UnsafePointer<UInt8>?, _ length: Int) -> String {
        guard let pointer else { return "" }
        return String(decoding: UnsafeBufferPointer(start: pointer, count: length), as: UTF8.self)
    }
}
