package import CInterop
public import NIOCore

/// One nghttp2 session in memory mode: owns the session, its options and its
/// callbacks; checks every nghttp2 return code; turns callbacks into
/// `HTTP2SessionEvent`s for its delegate.
///
/// Not thread-safe: confine it (and its delegate) to one event loop. The
/// delegate is held unretained: it owns the session and outlives it.
/// The C callbacks recover the session from `user_data` with `Unmanaged`.
public final class HTTP2Session {
    public enum Role: Sendable { case client, server }

    /// Hands an event to the delegate behind the raw pointer.
    public typealias Deliver = (UnsafeMutableRawPointer, HTTP2Session, HTTP2SessionEvent) -> Void

    @usableFromInline let session: OpaquePointer
    /// The delegate, unretained (it owns the session and outlives it).
    private let delegate: UnsafeMutableRawPointer
    /// Calls the delegate's concrete type: an `unowned(unsafe)` existential
    /// was retained and released around every event (7+ per request).
    private let deliver: Deliver

    /// Inlinable so that `deliver` is formed in the delegate's module, for its
    /// concrete type: the delegate's `http2Session(_:event:)` is then a direct
    /// call (or inlined) instead of a generic closure calling a witness thunk
    /// (~25 instructions per event, a dozen events per request).
    @inlinable
    public convenience init<Delegate: HTTP2SessionDelegate>(
        role: Role, delegate: Delegate, options: HTTP2SessionOptions = HTTP2SessionOptions()
    ) throws(HTTP2SessionError) {
        try self.init(role: role, delegate: Unmanaged.passUnretained(delegate).toOpaque(), options: options) {
            raw, session, event in
            Unmanaged<Delegate>.fromOpaque(raw)._withUnsafeGuaranteedRef { $0.http2Session(session, event: event) }
        }
    }

    @usableFromInline
    init(
        role: Role, delegate: UnsafeMutableRawPointer, options: HTTP2SessionOptions, deliver: @escaping Deliver
    ) throws(HTTP2SessionError) {
        self.delegate = delegate
        self.deliver = deliver
        var option: OpaquePointer?
        let optionResult = nghttp2_option_new(&option)
        guard optionResult == 0, let option else { throw HTTP2SessionError("nghttp2_option_new", optionResult) }
        defer { nghttp2_option_del(option) }
        if options.noClosedStreams { nghttp2_option_set_no_closed_streams(option, 1) }
        if let limit = options.streamResetRateLimit {
            nghttp2_option_set_stream_reset_rate_limit(option, limit.burst, limit.rate)
        }
        if let value = options.maxOutboundAck { nghttp2_option_set_max_outbound_ack(option, value) }
        if let value = options.maxSettings { nghttp2_option_set_max_settings(option, value) }
        if let value = options.maxContinuations { nghttp2_option_set_max_continuations(option, value) }

        var created: OpaquePointer?
        // `self` is not complete yet, but the session only calls back from recv/send.
        let placeholder = UnsafeMutableRawPointer(bitPattern: 1)!
        let result = switch role {
        case .server: nghttp2_session_server_new2(&created, HTTP2Callbacks.shared, placeholder, option)
        case .client: nghttp2_session_client_new2(&created, HTTP2Callbacks.shared, placeholder, option)
        }
        guard result == 0, let created else {
            throw HTTP2SessionError(role == .server ? "nghttp2_session_server_new2" : "nghttp2_session_client_new2", result)
        }
        session = created
        nghttp2_session_set_user_data(created, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        nghttp2_session_del(session)
    }

    // MARK: - Input and output

    /// Feeds received bytes; events reach the delegate before this returns.
    public func receive(_ buffer: ByteBuffer) throws(HTTP2SessionError) {
        let result = buffer.withUnsafeReadableBytes { bytes in
            nghttp2_session_mem_recv(session, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        }
        if result < 0 { throw HTTP2SessionError("nghttp2_session_mem_recv", Int32(truncatingIfNeeded: result)) }
    }

    /// Hands every pending outbound chunk to `body`, in order, until nghttp2 has none.
    @inlinable
    public func drainOutput(_ body: (UnsafeRawBufferPointer) -> Void) throws(HTTP2SessionError) {
        while true {
            var pointer: UnsafePointer<UInt8>?
            let count = memSend(&pointer)
            if count < 0 { throw HTTP2SessionError("nghttp2_session_mem_send", Int32(truncatingIfNeeded: count)) }
            guard count > 0, let pointer else { return }
            body(UnsafeRawBufferPointer(start: pointer, count: count))
        }
    }

    /// The next pending outbound chunk, valid until the next call into the
    /// session; nil when nghttp2 has none. A loop over it costs less than
    /// `drainOutput(_:)`'s closure, whose captured state is checked for
    /// exclusivity on every chunk (~75 instructions, 3 chunks per request).
    @inlinable
    public func nextOutput() throws(HTTP2SessionError) -> UnsafeRawBufferPointer? {
        var pointer: UnsafePointer<UInt8>?
        let count = memSend(&pointer)
        if count < 0 { throw HTTP2SessionError("nghttp2_session_mem_send", Int32(truncatingIfNeeded: count)) }
        guard count > 0, let pointer else { return nil }
        return UnsafeRawBufferPointer(start: pointer, count: count)
    }

    /// Appends everything pending to `buffer`.
    public func drainOutput(into buffer: inout ByteBuffer) throws(HTTP2SessionError) {
        try drainOutput { buffer.writeBytes($0) }
    }

    /// Neither side wants anything more: the connection can close.
    public var isFinished: Bool {
        nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0
    }

    // MARK: - Stream data

    /// Attaches the owner's per-stream pointer (passed back in events).
    public func setStreamData(_ data: UnsafeMutableRawPointer?, for streamID: Int32) {
        // Fails only for an unknown stream, which then has no events to carry it.
        _ = nghttp2_session_set_stream_user_data(session, streamID, data)
    }

    public func streamData(for streamID: Int32) -> UnsafeMutableRawPointer? {
        nghttp2_session_get_stream_user_data(session, streamID)
    }

    /// The peer has ended its side of the stream (or the stream is gone).
    public func isRemoteClosed(_ streamID: Int32) -> Bool {
        nghttp2_session_get_stream_remote_close(session, streamID) != 0
    }

    /// The highest stream ID the session has handed to us.
    public var lastProcessedStreamID: Int32 { nghttp2_session_get_last_proc_stream_id(session) }

    /// The peer's value for a setting.
    package func remoteSetting(_ id: nghttp2_settings_id) -> UInt32 {
        nghttp2_session_get_remote_settings(session, id)
    }

    // MARK: - Submissions (each checked)

    package func submitSettings(_ entries: [(id: nghttp2_settings_id, value: UInt32)]) throws(HTTP2SessionError) {
        let list = entries.map { nghttp2_settings_entry(settings_id: Int32($0.id.rawValue), value: $0.value) }
        try check("nghttp2_submit_settings", nghttp2_submit_settings(session, flagNone, list, list.count))
    }

    /// The connection-level receive window.
    public func setLocalWindowSize(_ size: Int32) throws(HTTP2SessionError) {
        try check("nghttp2_session_set_local_window_size",
                  nghttp2_session_set_local_window_size(session, flagNone, 0, size))
    }

    /// A response's HEADERS; with a body, DATA comes from it (kept alive by the caller until the stream closes).
    package func submitResponse(
        streamID: Int32, headers: UnsafePointer<nghttp2_nv>, count: Int, body: HTTP2OutboundBody?
    ) throws(HTTP2SessionError) {
        let result: Int32
        if let body {
            var provider = body.provider
            result = nghttp2_submit_response(session, streamID, headers, count, &provider)
        } else {
            result = nghttp2_submit_response(session, streamID, headers, count, nil)
        }
        try check("nghttp2_submit_response", result)
    }

    /// A request; returns its stream ID. The body (if any) must live until the stream closes.
    package func submitRequest(
        headers: UnsafePointer<nghttp2_nv>, count: Int, body: HTTP2OutboundBody?, streamData: UnsafeMutableRawPointer?
    ) throws(HTTP2SessionError) -> Int32 {
        let result: Int32
        if let body {
            var provider = body.provider
            result = nghttp2_submit_request(session, nil, headers, count, &provider, streamData)
        } else {
            result = nghttp2_submit_request(session, nil, headers, count, nil, streamData)
        }
        try check("nghttp2_submit_request", result)
        return result
    }

    package func submitTrailer(streamID: Int32, headers: UnsafePointer<nghttp2_nv>, count: Int) throws(HTTP2SessionError) {
        try check("nghttp2_submit_trailer", nghttp2_submit_trailer(session, streamID, headers, count))
    }

    package func submitRSTStream(streamID: Int32, errorCode: nghttp2_error_code) throws(HTTP2SessionError) {
        try check("nghttp2_submit_rst_stream",
                  nghttp2_submit_rst_stream(session, flagNone, streamID, errorCode.rawValue))
    }

    package func submitGoaway(lastStreamID: Int32, errorCode: nghttp2_error_code = NGHTTP2_NO_ERROR) throws(HTTP2SessionError) {
        try check("nghttp2_submit_goaway",
                  nghttp2_submit_goaway(session, flagNone, lastStreamID, errorCode.rawValue, nil, 0))
    }

    /// GOAWAY with the last stream ID 2^31-1: "stop opening streams soon".
    public func submitShutdownNotice() throws(HTTP2SessionError) {
        try check("nghttp2_submit_shutdown_notice", nghttp2_submit_shutdown_notice(session))
    }

    /// PING with an 8-byte payload (big-endian), echoed in `pingAck`.
    public func submitPing(payload: UInt64) throws(HTTP2SessionError) {
        var bytes = payload.bigEndian
        let result = withUnsafeBytes(of: &bytes) {
            nghttp2_submit_ping(session, flagNone, $0.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        try check("nghttp2_submit_ping", result)
    }

    /// GOAWAY with an error and stop: the session then only flushes.
    package func terminate(errorCode: nghttp2_error_code) throws(HTTP2SessionError) {
        try check("nghttp2_session_terminate_session",
                  nghttp2_session_terminate_session(session, errorCode.rawValue))
    }

    /// Wakes a body that returned "no data yet" (after more was appended).
    public func resumeData(streamID: Int32) throws(HTTP2SessionError) {
        try check("nghttp2_session_resume_data", nghttp2_session_resume_data(session, streamID))
    }

    @usableFromInline var flagNone: UInt8 { UInt8(NGHTTP2_FLAG_NONE.rawValue) }

    /// `nghttp2_session_mem_send` for the inlinable `drainOutput` (which cannot
    /// name a C function: CInterop is not a public import).
    @usableFromInline func memSend(_ pointer: inout UnsafePointer<UInt8>?) -> Int {
        nghttp2_session_mem_send(session, &pointer)
    }

    @inline(__always)
    private func check(_ operation: String, _ result: Int32) throws(HTTP2SessionError) {
        if result < 0 { throw HTTP2SessionError(operation, result) }
    }

    // MARK: - Events

    /// Hands `event` to the delegate of the session behind nghttp2's
    /// `user_data` (no retain: the session outlives its callbacks).
    @inline(__always)
    static func emit(_ userData: UnsafeMutableRawPointer, _ event: HTTP2SessionEvent) {
        // `unowned(unsafe) let … = takeUnretainedValue()` cost a retain and
        // a release of the session and of `deliver`'s context per event.
        Unmanaged<HTTP2Session>.fromOpaque(userData)._withUnsafeGuaranteedRef { session in
            session.deliver(session.delegate, session, event)
        }
    }
}
