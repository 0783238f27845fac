import CInterop
public import NIOCore

/// Fired inbound once the handshake is done and ALPN agreed on `h2` (or, for
/// a handler that does not require it, on whatever was agreed).
public struct TLSHandshakeCompleted: Sendable {
    /// The protocol ALPN agreed on; empty when none was.
    public let alpnProtocol: String
    /// The subject of the certificate the peer presented, if any (servers see
    /// client certificates only when the context requests them).
    public let peerCertificateSubject: String?
}

/// TLS over a NIO channel with OpenSSL and two memory BIOs.
///
/// Ciphertext read from the socket goes into the read BIO; `SSL_read` yields
/// plaintext passed on as one `ByteBuffer` per socket read. Plaintext written
/// by the next handler goes through `SSL_write`; the write BIO is drained into
/// one buffer on flush. The handshake must negotiate ALPN `h2`.
public final class OpenSSLHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    private enum State { case idle, handshaking, established, closed }

    private let tls: TLSContext
    /// The ALPN protocols a handshake must agree on; nil: any or none.
    private let allowedALPN: Set<String>?
    private let serverName: String?
    private var ssl: OpaquePointer?
    private var readBIO: OpaquePointer?
    private var writeBIO: OpaquePointer?
    private var state: State = .idle
    /// Plaintext written before the handshake finished.
    private var pendingWrites: [(ByteBuffer, EventLoopPromise<Void>?)] = []
    private var pendingFlushPromises: [EventLoopPromise<Void>] = []
    private let handshakeTimeout: TimeAmount
    private var handshakeTimer: Scheduled<Void>?

    /// - Parameters:
    ///   - serverName: SNI and the name (DNS or IP) the certificate must match (client side).
    ///   - handshakeTimeout: close the connection if the handshake has not finished by then.
    ///   - requireH2: fail a handshake that did not agree on ALPN `h2`
    ///     (false for an HTTP/1.1 server, which selects `http/1.1` or none).
    ///   - allowedALPN: set, fail a handshake that did not agree on one of
    ///     these (instead of `requireH2`'s `h2`).
    public init(
        context tls: TLSContext, serverName: String? = nil, handshakeTimeout: Duration = .seconds(10), requireH2: Bool = true,
        allowedALPN: Set<String>? = nil
    ) throws {
        self.tls = tls
        self.allowedALPN = allowedALPN ?? (requireH2 ? ["h2"] : nil)
        self.handshakeTimeout = TimeAmount(handshakeTimeout)
        self.serverName = serverName
        let ssl = try tls.makeSSL()
        guard let readBIO = BIO_new(BIO_s_mem()), let writeBIO = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw TLSError(.configuration, "BIO_new failed")
        }
        // The BIO ctrl returns the previous setting, not a status.
        _ = cinterop_BIO_set_mem_eof_return(readBIO, -1)
        _ = cinterop_BIO_set_mem_eof_return(writeBIO, -1)
        SSL_set_bio(ssl, readBIO, writeBIO)
        self.ssl = ssl
        self.readBIO = readBIO
        self.writeBIO = writeBIO
        if tls.role == .client {
            SSL_set_connect_state(ssl)
            // Fail closed: a name OpenSSL refuses (an unparsable IP literal,
            // an embedded NUL, an over-long SNI) throws here, so no handshake
            // runs with the peer-name check silently off. (`deinit` frees `ssl`.)
            if let serverName {
                do {
                    try Self.requirePeerName(serverName, ssl: ssl)
                } catch {
                    throw TLSError(.peerName, "cannot require the peer name \(serverName.debugDescription): \(error.message)")
                }
            }
        } else {
            SSL_set_accept_state(ssl)
        }
    }

    /// Makes the handshake check that the peer's certificate names `name`
    /// (a DNS name, or an IP literal) and sends a DNS name as SNI.
    static func requirePeerName(_ name: String, ssl: OpaquePointer) throws(TLSError) {
        if isIPAddress(name) {
            try OpenSSLCall.check("X509_VERIFY_PARAM_set1_ip_asc", .peerName) {
                X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name)
            }
            return
        }
        // With the length given, OpenSSL refuses an embedded NUL instead of
        // checking the name cut at it (SSL_set1_host takes a C string).
        let bytes = Array(name.utf8)
        try OpenSSLCall.check("X509_VERIFY_PARAM_set1_host", .peerName) {
            bytes.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) {
                    X509_VERIFY_PARAM_set1_host(SSL_get0_param(ssl), $0.baseAddress, $0.count)
                }
            }
        }
        try OpenSSLCall.check("SSL_set_tlsext_host_name", .peerName) { cinterop_SSL_set_tlsext_host_name(ssl, name) }
    }

    deinit {
        if let ssl { SSL_free(ssl) }  // frees both BIOs
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        assert(context.eventLoop.inEventLoop, "OpenSSLHandler used off its event loop")
        if context.channel.isActive { startHandshake(context: context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        assert(context.eventLoop.inEventLoop, "OpenSSLHandler used off its event loop")
        startHandshake(context: context)
        context.fireChannelActive()
    }

    private func startHandshake(context: ChannelHandlerContext) {
        guard state == .idle else { return }
        move(to: .handshaking)
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        handshakeTimer = context.eventLoop.scheduleTask(in: handshakeTimeout) {
            let (handler, context) = bound.value
            guard handler.state == .handshaking else { return }
            handler.fail(context: context, TLSError(.handshakeFailed, "TLS handshake timed out"))
        }
        if tls.role == .client { doHandshake(context: context) }
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        assert(context.eventLoop.inEventLoop, "OpenSSLHandler used off its event loop")
        guard state != .closed, let readBIO else { return }
        var buffer = unwrapInboundIn(data)
        let stored = buffer.withUnsafeReadableBytes { raw in
            var offset = 0
            while offset < raw.count {
                ERR_clear_error()
                let written = BIO_write(readBIO, raw.baseAddress! + offset, Int32(min(raw.count - offset, 1 << 30)))
                if written <= 0 { return false }
                offset += Int(written)
            }
            return true
        }
        buffer.moveReaderIndex(to: buffer.writerIndex)
        // A memory BIO refuses bytes only when it cannot grow; dropping them
        // would corrupt the record stream, so the connection fails instead.
        guard stored else {
            fail(context: context, TLSError(.protocolError, "BIO_write failed: \(TLSError.openSSLErrors())"))
            return
        }
        if state == .handshaking {
            doHandshake(context: context)
        }
        if state == .established {
            readPlaintext(context: context)
        }
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        assert(context.eventLoop.inEventLoop, "OpenSSLHandler used off its event loop")
        context.fireChannelReadComplete()
    }

    private func doHandshake(context: ChannelHandlerContext) {
        guard let ssl else { return }
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            flushCiphertext(context: context)
            var data: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &data, &length)
            let alpn = data.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(length)), as: UTF8.self) }
            if let allowedALPN, !allowedALPN.contains(alpn ?? "") {
                let wanted = allowedALPN.sorted().joined(separator: " or ")
                fail(context: context, TLSError(.alpnNotNegotiated, "peer did not agree to ALPN \(wanted) (got \(alpn ?? "none"))"))
                return
            }
            move(to: .established)
            handshakeTimer?.cancel()
            var subject: String?
            if let peer = SSL_get1_peer_certificate(ssl) {
                if let line = X509_NAME_oneline(X509_get_subject_name(peer), nil, 0) {
                    subject = String(cString: line)
                    CRYPTO_free(line, #fileID, #line)
                }
                X509_free(peer)
            }
            context.fireUserInboundEventTriggered(TLSHandshakeCompleted(alpnProtocol: alpn ?? "", peerCertificateSubject: subject))
            let writes = pendingWrites
            pendingWrites = []
            for (buffer, promise) in writes { encrypt(buffer, promise: promise, context: context) }
            if !writes.isEmpty { flushCiphertext(context: context) }
            return
        }
        let error = SSL_get_error(ssl, result)
        switch error {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            flushCiphertext(context: context)
        default:
            let verify = SSL_get_verify_result(ssl)
            let details = TLSError.openSSLErrors()
            flushCiphertext(context: context)  // send the alert
            if verify != X509_V_OK {
                let reason = String(cString: X509_verify_cert_error_string(verify))
                fail(context: context, TLSError(.certificateVerifyFailed, "certificate verify failed: \(reason)"))
            } else {
                fail(context: context, TLSError(.handshakeFailed, details))
            }
        }
    }

    private func readPlaintext(context: ChannelHandlerContext) {
        guard let ssl else { return }
        var output = context.channel.allocator.buffer(capacity: 16_384)
        var failure: TLSError?
        var peerClosed = false
        var rounds = 0
        while rounds < 100_000 {
            rounds += 1
            ERR_clear_error()
            var status: Int32 = 0
            output.writeWithUnsafeMutableBytes(minimumWritableBytes: 16_384) { raw in
                status = SSL_read(ssl, raw.baseAddress, Int32(min(raw.count, Int(Int32.max))))
                return status > 0 ? Int(status) : 0
            }
            if status > 0 { continue }
            let error = SSL_get_error(ssl, status)
            if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { break }
            if error == SSL_ERROR_ZERO_RETURN { peerClosed = true; break }
            failure = TLSError(.protocolError, TLSError.openSSLErrors())
            break
        }
        if output.readableBytes > 0 {
            context.fireChannelRead(wrapInboundOut(output))
        }
        flushCiphertext(context: context)
        if let failure {
            fail(context: context, failure)
        } else if peerClosed {
            move(to: .closed)
            context.close(promise: nil)
        }
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        assert(context.eventLoop.inEventLoop, "OpenSSLHandler used off its event loop")
        let buffer = unwrapOutboundIn(data)
        switch state {
        case .established:
            encrypt(buffer, promise: promise, context: context)
        case .idle, .handshaking:
            pendingWrites.append((buffer, promise))
        case .closed:
            promise?.fail(ChannelError.ioOnClosedChannel)
        }
    }

    public func flush(context: ChannelHandlerContext) {
        assert(context.eventLoop.inEventLoop, "OpenSSLHandler used off its event loop")
        if state == .established { flushCiphertext(context: context) }
    }

    private func encrypt(_ buffer: ByteBuffer, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
        guard let ssl else { promise?.fail(ChannelError.ioOnClosedChannel); return }
        var failed = false
        buffer.withUnsafeReadableBytes { raw in
            var offset = 0
            while offset < raw.count {
                ERR_clear_error()
                let written = SSL_write(ssl, raw.baseAddress! + offset, Int32(min(raw.count - offset, 1 << 30)))
                if written <= 0 { failed = true; break }
                offset += Int(written)
            }
        }
        if failed {
            let error = TLSError(.protocolError, TLSError.openSSLErrors())
            promise?.fail(error)
            fail(context: context, error)
        } else if let promise {
            pendingFlushPromises.append(promise)
        }
    }

    /// Moves everything OpenSSL produced into one buffer and writes it.
    private func flushCiphertext(context: ChannelHandlerContext) {
        guard let writeBIO else { return }
        let pending = Int(cinterop_BIO_pending(writeBIO))
        let promises = pendingFlushPromises
        pendingFlushPromises = []
        guard pending > 0 else {
            for promise in promises { promise.succeed(()) }
            return
        }
        var output = context.channel.allocator.buffer(capacity: pending)
        output.writeWithUnsafeMutableBytes(minimumWritableBytes: pending) { raw in
            Int(max(0, BIO_read(writeBIO, raw.baseAddress, Int32(pending))))
        }
        let writePromise: EventLoopPromise<Void>? = promises.isEmpty ? nil : context.eventLoop.makePromise()
        if let writePromise {
            writePromise.futureResult.whenComplete { result in
                for promise in promises { promise.completeWith(result) }
            }
        }
        context.writeAndFlush(wrapOutboundOut(output), promise: writePromise)
    }

    public func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        assert(context.eventLoop.inEventLoop, "OpenSSLHandler used off its event loop")
        if state == .established, let ssl, mode == .all {
            ERR_clear_error()
            SSL_shutdown(ssl)  // close_notify; best effort
            flushCiphertext(context: context)
        }
        move(to: .closed)
        failPendingWrites(ChannelError.ioOnClosedChannel)
        context.close(mode: mode, promise: promise)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        assert(context.eventLoop.inEventLoop, "OpenSSLHandler used off its event loop")
        if state == .handshaking {
            context.fireErrorCaught(TLSError(.handshakeFailed, "connection closed during the TLS handshake"))
        }
        move(to: .closed)
        handshakeTimer?.cancel()
        failPendingWrites(ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }

    /// The only moves: idle → handshaking → established, and any → closed.
    /// Another one is a bug: it fails in debug builds.
    private func move(to next: State) {
        switch (state, next) {
        case (.idle, .handshaking), (.handshaking, .established), (_, .closed):
            break
        default:
            assertionFailure("OpenSSLHandler: no move from \(state) to \(next)")
        }
        state = next
    }

    private func failPendingWrites(_ error: any Error) {
        let writes = pendingWrites
        pendingWrites = []
        for (_, promise) in writes { promise?.fail(error) }
        let promises = pendingFlushPromises
        pendingFlushPromises = []
        for promise in promises { promise.fail(error) }
    }

    private func fail(context: ChannelHandlerContext, _ error: TLSError) {
        guard state != .closed else { return }
        move(to: .closed)
        handshakeTimer?.cancel()
        failPendingWrites(error)
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }
}

func isIPAddress(_ host: String) -> Bool {
    if host.contains(":") { return true }
    let parts = host.split(separator: ".", omittingEmptySubsequences: false)
    return parts.count == 4 && parts.allSatisfy { UInt8($0) != nil }
}
