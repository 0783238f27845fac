import HeraldPrimitives
import Logging
public import NIOCore
import NIOPosix
import Synchronization
import TLSTransport

/// One place in the pool: at most one accepting connection at a time (plus
/// draining ones finishing their streams), a local queue of requests beyond
/// the peer's SETTINGS_MAX_CONCURRENT_STREAMS, and reconnect backoff, kept
/// in an ``HTTP2SlotStateMachine``. Everything runs on `eventLoop`; every
/// entry point asserts it (free in release builds).
@usableFromInline
package final class HTTP2ClientSlot: @unchecked Sendable {
    typealias Connection = HTTP2ClientConnection
    typealias Pending = HTTP2PendingRequest

    let index: Int
    @usableFromInline package let eventLoop: any EventLoop
    private let shared: HTTP2PoolShared
    private var machine = HTTP2SlotStateMachine<Connection>()
    private var pending = CircularBuffer<Pending>()
    private var draining: [ObjectIdentifier: Connection] = [:]
    private var reconnectTimer: ProviderTimer?
    /// Requests whose hand-over is being recorded: they hold a stream of the
    /// connection's capacity, so no more are marked than can be written.
    private var recordingHandOver = 0
    /// Requests queued plus in flight, read by the pool to pick the least-loaded slot.
    let load = Atomic<Int>(0)
    private(set) var lastError: String?
    /// Delays this slot waited before reconnecting (tests, status).
    private(set) var reconnectDelays: [Duration] = []

    init(index: Int, eventLoop: any EventLoop, shared: HTTP2PoolShared) {
        self.index = index
        self.eventLoop = eventLoop
        self.shared = shared
    }

    private var settings: HTTP2PoolSettings { shared.settings }

    /// One request reserved by ``HTTP2PoolCore/reserveSlot()`` is done.
    @usableFromInline
    package func release() {
        load.subtract(1, ordering: .relaxed)
    }

    /// Hands `request` to this slot's loop.
    @usableFromInline
    package func submit(_ request: HTTP2PendingRequest) {
        eventLoop.execute { self.enqueue(request) }
    }

    /// The caller's task was cancelled: withdraw `request` on this slot's loop.
    @usableFromInline
    package func withdraw(_ request: HTTP2PendingRequest) {
        eventLoop.execute { self.cancel(request) }
    }

    func enqueue(_ request: Pending) {
        eventLoop.assertInEventLoop()
        guard !machine.isShutdown else { request.fail(.shutdown); return }
        if let deadline = request.request.deadline {
            let clock = settings.clock
            if deadline.timeIntervalSince(clock.now()) <= 0 { request.fail(.deadlineExceeded); return }
            // One timer for the request's whole life, queued or in flight.
            request.deadlineTimer = clock.scheduleTimer(at: deadline, on: eventLoop) { [weak self, weak request] in
                guard let self, let request else { return }
                self.abandon(request, because: .deadlineExceeded)
            }
        }
        pending.append(request)
        pump()
    }

    /// The caller's task was cancelled: withdraw the request (queued or in flight).
    func cancel(_ request: Pending) {
        abandon(request, because: .cancelled)
    }

    /// Ends `request` with `error` wherever it is: out of the queue, or its
    /// stream reset (the answer, if one comes first, wins).
    private func abandon(_ request: Pending, because error: HTTP2ClientError) {
        eventLoop.assertInEventLoop()
        switch request.phase {
        case .completed:
            return
        case .onStream(let streamID):
            if let connection = request.connection {
                connection.cancelStream(streamID, because: error)
                return
            }
        case .queued, .handOverRecorded:
            break
        }
        if let index = pending.firstIndex(where: { $0 === request }) {
            pending.remove(at: index)
        }
        request.fail(error)
    }

    /// Starts queued requests while the connection has room; opens one if needed.
    ///
    /// A request with ``HTTP2ClientRequest/willHandOver`` is written only
    /// after that returns (the caller records the hand-over durably first),
    /// so a crash never leaves a push on the wire that the caller does not
    /// know about, and nothing is marked that is not about to go out.
    private func pump() {
        eventLoop.assertInEventLoop()
        switch machine.pump(hasQueued: !pending.isEmpty) {
        case .wait:
            return
        case .connect:
            connect()
        case .start(let connection):
            while !pending.isEmpty && connection.freeStreams - recordingHandOver > 0 {
                let next = pending.removeFirst()
                if next.completed { continue }
                if let hook = next.request.willHandOver, next.phase == .queued {
                    recordHandOver(next, hook)
                } else {
                    connection.start(next)
                }
            }
        }
    }

    private func recordHandOver(_ next: Pending, _ hook: HTTP2HandOverHook) {
        recordingHandOver += 1
        let loop = eventLoop
        hook { [self] error in
            loop.execute { [self] in
                recordingHandOver -= 1
                if machine.isShutdown {
                    next.fail(.shutdown)
                } else if let error {
                    next.fail(.handOverNotRecorded("\(error)"))
                } else if !next.completed {
                    next.handOverWasRecorded()
                    pending.prepend(next)  // first in line: it is marked, write it now
                }
                pump()
            }
        }
    }

    private func connect() {
        let settings = self.settings
        let connection = Connection(
            id: shared.nextConnectionID(), eventLoop: eventLoop, authority: settings.host, adapter: shared.adapter,
            clock: settings.clock, localStreamCap: settings.maxConcurrentStreamsPerConnection,
            responseTimeout: settings.responseTimeout, pingInterval: settings.pingInterval, idleTimeout: settings.idleTimeout)
        connection.slot = self
        machine.connecting(connection)
        let tls = shared.tls
        let host = settings.host
        ClientBootstrap(group: eventLoop)
            .channelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .connectTimeout(TimeAmount(settings.connectTimeout))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try OpenSSLHandler(context: tls, serverName: host)
                    try channel.pipeline.syncOperations.addHandlers([handler, connection])
                }
            }
            .connect(host: host, port: settings.port)
            .whenFailure { error in
                // The channel never came up; the handler saw nothing.
                connection.failedToConnect(.connectFailed("\(settings.endpointDescription): \(error)", retryable: true))
            }
    }

    // MARK: Connection events

    func connectionReady(_ connection: Connection) {
        eventLoop.assertInEventLoop()
        if machine.ready(connection) { pump() }
    }

    func connectionHasCapacity(_ connection: Connection) {
        eventLoop.assertInEventLoop()
        if connection === machine.accepting { pump() }
    }

    func connectionStoppedAccepting(_ connection: Connection) {
        eventLoop.assertInEventLoop()
        guard machine.stoppedAccepting(connection) else { return }
        shared.logger.debug("\(settings.label) connection draining (GOAWAY, idle or retired)", metadata: [
            "endpoint": "\(settings.endpointDescription)", "connection": "\(connection.id)",
        ])
        draining[ObjectIdentifier(connection)] = connection
        pump()
    }

    func connectionClosed(_ connection: Connection, error: HTTP2ClientError?, wasReady: Bool) {
        eventLoop.assertInEventLoop()
        draining.removeValue(forKey: ObjectIdentifier(connection))
        if let error, error != .shutdown {
            lastError = error.description
            shared.logger.warning("\(settings.label) connection closed", metadata: [
                "endpoint": "\(settings.endpointDescription)", "connection": "\(connection.id)",
                "error": "\(error)", "established": "\(wasReady)",
            ])
        }
        let failure = error ?? .connectFailed("connection closed during setup", retryable: true)
        var retryable = true
        if case .connectFailed(_, let canRetry) = failure { retryable = canRetry }
        switch machine.closed(connection, wasReady: wasReady, retryable: retryable) {
        case .none:
            return
        case .pump:
            pump()
        case .failQueue:
            failQueue(failure)
        case .failQueueAndBackOff(let failures):
            // Never got ready: fail the queue (callers retry or report), and back off.
            failQueue(failure)
            scheduleReconnect(failures: failures)
        }
    }

    private func failQueue(_ failure: HTTP2ClientError) {
        let queued = pending
        pending.removeAll()
        for request in queued { request.fail(failure) }
    }

    private func scheduleReconnect(failures: Int) {
        let delay = settings.reconnectBackoff.delay(afterFailures: failures)
        reconnectDelays.append(delay)
        shared.logger.info("\(settings.label) reconnect scheduled", metadata: [
            "endpoint": "\(settings.endpointDescription)", "delay": "\(delay)", "failures": "\(failures)",
        ])
        // A timer on the pool's clock (on this loop), not a task: shutdown
        // cancels it, and a test's manual clock fires it.
        reconnectTimer = settings.clock.scheduleTimer(after: delay, on: eventLoop) { [self] in
            eventLoop.assertInEventLoop()
            reconnectTimer = nil
            if machine.reconnectTimerFired() { pump() }
        }
    }

    // MARK: Status and shutdown

    struct Snapshot: Sendable {
        var open: Int
        var inFlight: Int
        var queued: Int
        var lastError: String?
        var waitingToReconnect: Bool
        var reconnectDelays: [Duration]
    }

    func snapshot() -> Snapshot {
        eventLoop.assertInEventLoop()
        let all = Array(draining.values) + (machine.accepting.map { [$0] } ?? [])
        return Snapshot(
            open: all.filter { $0.machine.isOpen }.count,
            inFlight: all.reduce(0) { $0 + $1.inFlight }, queued: pending.count,
            lastError: lastError, waitingToReconnect: machine.isBackingOff, reconnectDelays: reconnectDelays)
    }

    func shutdown() {
        eventLoop.assertInEventLoop()
        let accepting = machine.shutdown()
        reconnectTimer?.cancel()
        reconnectTimer = nil
        failQueue(.shutdown)
        accepting?.close(error: .shutdown)
        for (_, other) in draining { other.close(error: .shutdown) }
    }
}

/// State every slot of a pool shares.
final class HTTP2PoolShared: Sendable {
    let settings: HTTP2PoolSettings
    let adapter: HTTP2ErasedAdapter
    let tls: TLSContext
    let logger: Logger
    private let connectionIDs = Atomic<Int>(0)

    init(settings: HTTP2PoolSettings, adapter: HTTP2ErasedAdapter, tls: TLSContext, logger: Logger) {
        self.settings = settings
        self.adapter = adapter
        self.tls = tls
        self.logger = logger
    }

    func nextConnectionID() -> Int { connectionIDs.add(1, ordering: .relaxed).newValue }
}
