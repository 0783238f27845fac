import CInterop

/// Header name/value storage that lives for the whole process, so the hot path can
/// pass `nghttp2_nv`s with NO_COPY flags and nghttp2 never copies them.
enum StaticHeaders {
    static func cString(_ string: String) -> (UnsafeMutablePointer<UInt8>, Int) {
        let bytes = Array(string.utf8)
        let pointer = UnsafeMutablePointer<UInt8>.allocate(capacity: bytes.count + 1)
        pointer.initialize(from: bytes, count: bytes.count)
        pointer[bytes.count] = 0
        return (pointer, bytes.count)
    }

    static func nv(_ name: String, _ value: String) -> nghttp2_nv {
        let (namePointer, nameLength) = cString(name)
        let (valuePointer, valueLength) = cString(value)
        return nghttp2_nv(
            name: namePointer, value: valuePointer, namelen: nameLength, valuelen: valueLength,
            flags: UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue))
    }

    static func array(_ pairs: [(String, String)]) -> UnsafeMutablePointer<nghttp2_nv> {
        let pointer = UnsafeMutablePointer<nghttp2_nv>.allocate(capacity: pairs.count)
        for (index, pair) in pairs.enumerated() {
            (pointer + index).initialize(to: nv(pair.0, pair.1))
        }
        return pointer
    }

    /// `:status 200`, `content-type: application/grpc`, `grpc-accept-encoding: identity,gzip`.
    nonisolated(unsafe) static let okResponse = array([
        (":status", "200"), ("content-type", "application/grpc"), ("grpc-accept-encoding", GRPCGzip.acceptEncoding),
    ])
    static let okResponseCount = 3

    /// `grpc-status: 0`.
    nonisolated(unsafe) static let okTrailers = array([("grpc-status", "0")])

    /// The Trailers-Only prefix: `:status 200`, `content-type`, `grpc-accept-encoding`.
    nonisolated(unsafe) static let trailersOnlyPrefix = okResponse

    /// `grpc-status: <n>` for codes 0...16 (others are built per call).
    nonisolated(unsafe) static let statusNVs: [nghttp2_nv] = (0...16).map { nv("grpc-status", String($0)) }

    /// `grpc-message` name (value supplied per call, copied by nghttp2).
    nonisolated(unsafe) static let grpcMessageName = cString("grpc-message")
    nonisolated(unsafe) static let grpcStatusName = cString("grpc-status")

    nonisolated(unsafe) static let status415 = array([
        (":status", "415"), ("content-type", "text/plain; charset=utf-8"),
    ])
    static let status415Count = 2
    nonisolated(unsafe) static let status405 = array([
        (":status", "405"), ("allow", "POST"), ("content-type", "text/plain; charset=utf-8"),
    ])
    static let status405Count = 3
}
