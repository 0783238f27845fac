package import CInterop

/// The one DATA provider: a queue of byte chunks that nghttp2 copies into
/// DATA frames as flow control allows.
///
/// A chunk may carry a 5-byte gRPC length prefix, produced on the fly (the
/// message itself is never copied to prepend it). While the queue is empty and
/// the body is not finished, the read callback answers `NGHTTP2_ERR_DEFERRED`;
/// `HTTP2Session.append(_:to:streamID:)` resumes it. `finish(trailers:)` ends
/// the body: with trailers, END_STREAM goes on them; without, on the last DATA.
///
/// The owner keeps the body alive until the stream closes. Loop-confined.
public final class HTTP2OutboundBody {
    /// Trailers sent once the body is done.
    package enum Trailers {
        /// Header fields whose storage lives for the whole process.
        case staticList(UnsafePointer<nghttp2_nv>, count: Int)
        /// Header fields copied by nghttp2 at submission.
        case owned([(name: String, value: String)])
    }

    struct Chunk {
        var bytes: [UInt8]
        var prefixed: Bool
        var total: Int { bytes.count + (prefixed ? 5 : 0) }
    }

    // @exclusivity(unchecked): loop-confined, and no access to these overlaps
    // another; the runtime check cost ~75 instructions per access.
    @exclusivity(unchecked) private var current: Chunk?
    @exclusivity(unchecked) private var offset = 0
    @exclusivity(unchecked) private var queue: [Chunk] = []
    @exclusivity(unchecked) private var queueHead = 0
    @exclusivity(unchecked) private var finished = false
    @exclusivity(unchecked) private var trailers: Trailers?
    /// nghttp2 was told "no data yet" and waits for `resume_data`.
    @exclusivity(unchecked) var isDeferred = false
    /// Bytes queued and not yet handed to nghttp2.
    @exclusivity(unchecked) public private(set) var pendingBytes = 0
    /// Links spare bodies in their owner's free list (see `reuse`).
    @exclusivity(unchecked) package var nextSpare: HTTP2OutboundBody?

    public init() {}

    /// A finished body of one chunk.
    package convenience init(_ bytes: [UInt8], prefixed: Bool = false, trailers: Trailers? = nil) {
        self.init()
        enqueue(bytes, prefixed: prefixed)
        finish(trailers: trailers)
    }

    /// Makes a body whose stream nghttp2 has closed into a finished body of
    /// one chunk, as `init(_:prefixed:trailers:)` makes one, without allocating.
    package func reuse(_ bytes: [UInt8], prefixed: Bool, trailers: Trailers?) {
        let chunk = Chunk(bytes: bytes, prefixed: prefixed)
        current = chunk
        offset = 0
        if !queue.isEmpty { queue.removeAll() }
        queueHead = 0
        finished = true
        self.trailers = trailers
        isDeferred = false
        pendingBytes = chunk.total
    }

    /// Whether `finish` has been called.
    public var isFinished: Bool { finished }

    /// Adds a chunk (no effect after `finish`). Returns true when nghttp2 must be resumed.
    @discardableResult
    public func enqueue(_ bytes: [UInt8], prefixed: Bool) -> Bool {
        guard !finished else { return false }
        let chunk = Chunk(bytes: bytes, prefixed: prefixed)
        pendingBytes += chunk.total
        if current == nil { current = chunk } else { queue.append(chunk) }
        return takeDeferred()
    }

    /// Ends the body. Returns true when nghttp2 must be resumed.
    @discardableResult
    package func finish(trailers: Trailers?) -> Bool {
        guard !finished else { return false }
        finished = true
        self.trailers = trailers
        return takeDeferred()
    }

    private func takeDeferred() -> Bool {
        defer { isDeferred = false }
        return isDeferred
    }

    var provider: nghttp2_data_provider {
        nghttp2_data_provider(
            source: nghttp2_data_source(ptr: Unmanaged.passUnretained(self).toOpaque()),
            read_callback: HTTP2OutboundBody.read)
    }

    /// Copies up to `capacity` bytes into `buffer`; sets `eof` when the body is done.
    /// Works on locals and stores once: class properties touched per byte would
    /// each pay a dynamic exclusivity check.
    func read(into buffer: UnsafeMutablePointer<UInt8>, capacity: Int, eof: inout Bool) -> Int {
        var written = 0
        var offset = self.offset
        while written < capacity, let chunk = current {
            let count = chunk.bytes.count
            let prefix = chunk.prefixed ? 5 : 0
            if offset < prefix {
                let length = UInt32(truncatingIfNeeded: count)
                let header: (UInt8, UInt8, UInt8, UInt8, UInt8) = (
                    0, UInt8(truncatingIfNeeded: length >> 24), UInt8(truncatingIfNeeded: length >> 16),
                    UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length))
                withUnsafeBytes(of: header) { bytes in
                    while offset < 5, written < capacity {
                        buffer[written] = bytes[offset]
                        written += 1
                        offset += 1
                    }
                }
            }
            let start = offset - prefix
            let take = min(capacity - written, count - start)
            if take > 0 {
                chunk.bytes.withUnsafeBufferPointer { bytes in
                    (buffer + written).update(from: bytes.baseAddress! + start, count: take)
                }
                written += take
                offset += take
            }
            if offset == count + prefix {
                pendingBytes -= count + prefix
                offset = 0
                if queueHead < queue.count {
                    current = queue[queueHead]
                    queueHead += 1
                    if queueHead == queue.count {
                        queue.removeAll(keepingCapacity: true)
                        queueHead = 0
                    }
                } else {
                    current = nil
                }
            }
        }
        self.offset = offset
        eof = current == nil && finished
        return written
    }

    static let read: nghttp2_data_source_read_callback = { session, streamID, buffer, length, flags, source, _ in
        guard let session, let buffer, let flags, let raw = source?.pointee.ptr else {
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        return Unmanaged<HTTP2OutboundBody>.fromOpaque(raw)._withUnsafeGuaranteedRef { body in
            var eof = false
            let written = body.read(into: buffer, capacity: length, eof: &eof)
            if eof {
                guard let trailers = body.trailers else {
                    flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
                    return written
                }
                body.trailers = nil
                let result: Int32 = switch trailers {
                case .staticList(let list, let count):
                    nghttp2_submit_trailer(session, streamID, list, count)
                case .owned(let fields):
                    NGHTTP2Headers.with(fields) { nghttp2_submit_trailer(session, streamID, $0, $1) }
                }
                // Without its trailers the stream cannot end well: reset it.
                if result != 0 { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
                flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue | NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue
                return written
            }
            if written == 0 {
                body.isDeferred = true
                return Int(NGHTTP2_ERR_DEFERRED.rawValue)
            }
            return written
        }
    }
}

extension HTTP2Session {
    /// Queues a chunk on a stream's body, waking nghttp2 if the body was waiting.
    public func append(_ bytes: [UInt8], prefixed: Bool, to body: HTTP2OutboundBody, streamID: Int32) throws(HTTP2SessionError) {
        if body.enqueue(bytes, prefixed: prefixed) { try resumeData(streamID: streamID) }
    }

    /// Ends a stream's body, waking nghttp2 if the body was waiting.
    package func finish(_ body: HTTP2OutboundBody, trailers: HTTP2OutboundBody.Trailers?, streamID: Int32) throws(HTTP2SessionError) {
        if body.finish(trailers: trailers) { try resumeData(streamID: streamID) }
    }
}
