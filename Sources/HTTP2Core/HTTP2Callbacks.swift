import CInterop

/// The one set of nghttp2 callbacks: each turns its C arguments into an
/// `HTTP2SessionEvent` for the session's delegate and returns 0.
enum HTTP2Callbacks {
    nonisolated(unsafe) static let shared: OpaquePointer = {
        var created: OpaquePointer?
        let result = nghttp2_session_callbacks_new(&created)
        // Only fails when out of memory, before any connection exists.
        guard result == 0, let callbacks = created else { fatalError("nghttp2_session_callbacks_new: \(result)") }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            guard let frame, let userData, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            HTTP2Session.emit(userData, .beginHeaders(
                streamID: frame.pointee.hd.stream_id, category: HTTP2HeadersCategory(frame.pointee.headers.cat)))
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) {
            session, frame, name, nameLength, value, valueLength, _, userData in
            guard let session, let frame, let userData, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue)
            else { return 0 }
            let streamID = frame.pointee.hd.stream_id
            HTTP2Session.emit(userData, .header(
                streamID: streamID, streamData: nghttp2_session_get_stream_user_data(session, streamID),
                category: HTTP2HeadersCategory(frame.pointee.headers.cat),
                name: UnsafeRawBufferPointer(start: name, count: nameLength),
                value: UnsafeRawBufferPointer(start: value, count: valueLength)))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { session, frame, userData in
            guard let session, let frame, let userData else { return 0 }
            let header = frame.pointee.hd
            let isAck = header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0
            let endStream = header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
            switch UInt32(header.type) {
            case NGHTTP2_HEADERS.rawValue:
                let data = nghttp2_session_get_stream_user_data(session, header.stream_id)
                HTTP2Session.emit(userData, .headersComplete(
                    streamID: header.stream_id, streamData: data,
                    category: HTTP2HeadersCategory(frame.pointee.headers.cat)))
                if endStream { HTTP2Session.emit(userData, .endStream(streamID: header.stream_id, streamData: data)) }
            case NGHTTP2_DATA.rawValue:
                if endStream {
                    HTTP2Session.emit(userData, .endStream(
                        streamID: header.stream_id,
                        streamData: nghttp2_session_get_stream_user_data(session, header.stream_id)))
                }
            case NGHTTP2_RST_STREAM.rawValue:
                HTTP2Session.emit(userData, .resetReceived(
                    streamID: header.stream_id,
                    streamData: nghttp2_session_get_stream_user_data(session, header.stream_id),
                    errorCode: frame.pointee.rst_stream.error_code))
            case NGHTTP2_SETTINGS.rawValue where !isAck:
                HTTP2Session.emit(userData, .settings)
            case NGHTTP2_PING.rawValue where !isAck:
                HTTP2Session.emit(userData, .pingReceived)
            case NGHTTP2_PING.rawValue:
                let payload = withUnsafeBytes(of: frame.pointee.ping.opaque_data) { bytes in
                    bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                }
                HTTP2Session.emit(userData, .pingAck(payload: payload))
            case NGHTTP2_GOAWAY.rawValue:
                HTTP2Session.emit(userData, .goaway(
                    lastStreamID: frame.pointee.goaway.last_stream_id, errorCode: frame.pointee.goaway.error_code))
            default:
                break
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) {
            session, _, streamID, data, length, userData in
            guard let session, let userData else { return 0 }
            HTTP2Session.emit(userData, .dataChunk(
                streamID: streamID, streamData: nghttp2_session_get_stream_user_data(session, streamID),
                bytes: UnsafeRawBufferPointer(start: data, count: length)))
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { session, streamID, errorCode, userData in
            guard let session, let userData else { return 0 }
            let data = nghttp2_session_get_stream_user_data(session, streamID)
            if data != nil { nghttp2_session_set_stream_user_data(session, streamID, nil) }
            HTTP2Session.emit(userData, .streamClosed(streamID: streamID, streamData: data, errorCode: errorCode))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
            guard let frame, let userData else { return 0 }
            let header = frame.pointee.hd
            if header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0,
               header.type == UInt8(NGHTTP2_HEADERS.rawValue) || header.type == UInt8(NGHTTP2_DATA.rawValue) {
                HTTP2Session.emit(userData, .endStreamSent(streamID: header.stream_id))
            }
            return 0
        }
        return callbacks
    }()
}
