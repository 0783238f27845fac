import HeraldPrimitives
import Logging
import NIOCore
import NIOPosix
import Synchronization
import TLSTransport

/// One place in the pool: at most one accepting connection at a time (plus
/// draining ones finishing their streams), a local queue of requests beyond
/// the peer's SETTINGS_MAX_CONCURRENT_STREAMS, and reconnect backoff.
/// Everything runs on `eventLoop`.
final class FCMConnectionSlot: FCMConnectionDelegate, @unchecked Sendable {
    let index: Int
    let eventLoop: any EventLoop
    private let shared: FCMPoolShared
    private var pending = CircularBuffer<FCMPendingRequest>()
    private var connection: FCMConnection?
    private var draining: [ObjectIdentifier: FCMConnection] = [:]
    private var connecting = false
    private var waitingToReconnect = false
    private var reconnectTimer: FCMTimer?
    private var consecutiveFailures = 0
    /// Requests whose hand-over is being recorded: they hold a stream of the
    /// connection's capacity, so no more are marked than can be written.
    private var recordingHandOver = 0
    private var isShutdown = false
    /// Requests queued plus in flight, read by the pool to pick the least-loaded slot.
    let load = Atomic<Int>(0)
    private(set) var lastError: String?
    /// Delays this slot waited before reconnecting (tests, status).
    private(set) var reconnectDelays: [Duration] = []

    init(index: Int, eventLoop: any EventLoop, shared: FCMPoolShared) {
        self.index = index
        self.eventLoop = eventLoop
        self.shared = shared
    }

    func enqueue(_ request: FCMPendingRequest) {
        guard !isShutdown else { request.fail(.shutdown); return }
        if let deadline = request.request.deadline {
            let clock = shared.settings.clock
            if deadline.timeIntervalSince(clock.now()) <= 0 { request.fail(.deadlineExceeded); return }
            request.deadlineTimer = clock.scheduleTimer(at: deadline, on: eventLoop) { [weak self, weak request] in
                guard let self, let request else { return }
                self.expireQueued(request)
            }
        }
        pending.append(request)
        pump()
    }

    private func expireQueued(_ request: FCMPendingRequest) {
        if let index = pending.firstIndex(where: { $0 === request }) {
            pending.remove(at: index)
            request.fail(.deadlineExceeded)
        }
    }

    /// The caller's task was cancelled: withdraw the request (queued or in flight).
    func cancel(_ request: FCMPendingRequest) {
        guard !request.completed else { return }
        if let connection = request.connection, request.streamID > 0 {
            connection.cancelStream(request.streamID, because: .cancelled)
        } else if let index = pending.firstIndex(where: { $0 === request }) {
            pending.remove(at: index)
            request.fail(.cancelled)
        } else {
            request.fail(.cancelled)
        }
    }

    /// Starts queued requests while the connection has room; opens one if needed.
    ///
    /// A request with ``FCMHTTPRequest/willHandOver`` is written only after
    /// that returns (the caller records the hand-over durably first), so a
    /// crash never leaves a message on the wire that the caller does not
    /// know about, and nothing is marked that is not about to go out.
    private func pump() {
        if let connection {
            while !pending.isEmpty && connection.freeStreams - recordingHandOver > 0 {
                let next = pending.removeFirst()
                if next.completed { continue }
                if let hook = next.request.willHandOver, !next.handOverRecorded {
                    recordingHandOver += 1
                    let loop = eventLoop
                    hook { [self] error in
                        loop.execute { [self] in
                            recordingHandOver -= 1
                            if isShutdown {
                                next.fail(.shutdown)
                            } else if let error {
                                next.fail(.handOverNotRecorded("\(error)"))
                            } else if !next.completed {
                                next.handOverRecorded = true
                                pending.prepend(next)  // first in line: it is marked, write it now
                            }
                            pump()
                        }
                    }
                } else {
                    connection.start(next)
                }
            }
            return
        }
        if !pending.isEmpty && !connecting && !waitingToReconnect {
            connect()
        }
    }

    private func connect() {
        connecting = true
        let configuration = shared.settings
        let id = shared.nextConnectionID()
        let connection = FCMConnection(
            id: id, eventLoop: eventLoop, authority: configuration.endpoint.host, clock: configuration.clock,
            localStreamCap: configuration.maxConcurrentStreamsPerConnection, responseTimeout: configuration.responseTimeout,
            pingInterval: configuration.pingInterval, idleTimeout: configuration.idleTimeout)
        connection.delegate = self
        self.connection = connection
        let tls = shared.tls
        let host = configuration.endpoint.host
        ClientBootstrap(group: eventLoop)
            .channelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .connectTimeout(TimeAmount(configuration.connectTimeout))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try OpenSSLHandler(context: tls, serverName: host)
                    try channel.pipeline.syncOperations.addHandlers([handler, connection])
                }
            }
            .connect(host: host, port: configuration.endpoint.port)
            .whenFailure { error in
                // The channel never came up; the handler saw nothing.
                connection.failedToConnect(.connectFailed("\(configuration.endpoint): \(error)", retryable: true))
            }
    }

    // MARK: FCMConnectionDelegate

    func connectionReady(_ connection: FCMConnection) {
        guard connection === self.connection else { return }
        connecting = false
        consecutiveFailures = 0
        pump()
    }

    func connectionHasCapacity(_ connection: FCMConnection) {
        if connection === self.connection { pump() }
    }

    func connectionStoppedAccepting(_ connection: FCMConnection) {
        guard connection === self.connection else { return }
        shared.logger.debug("\(shared.settings.label) connection draining (GOAWAY or idle)", metadata: [
            "endpoint": "\(shared.settings.endpoint)", "connection": "\(connection.id)",
        ])
        self.connection = nil
        connecting = false
        draining[ObjectIdentifier(connection)] = connection
        pump()
    }

    func connectionClosed(_ connection: FCMConnection, error: FCMTransportError?, wasReady: Bool) {
        draining.removeValue(forKey: ObjectIdentifier(connection))
        if let error, error != .shutdown {
            lastError = error.description
            shared.logger.warning("\(shared.settings.label) connection closed", metadata: [
                "endpoint": "\(shared.settings.endpoint)", "connection": "\(connection.id)",
                "error": "\(error)", "established": "\(wasReady)",
            ])
        }
        guard connection === self.connection else { return }
        self.connection = nil
        connecting = false
        guard !wasReady else {
            pump()  // a working connection went away: reopen at once if there is work
            return
        }
        // Never got ready: fail the queue (callers retry or report), and back off.
        consecutiveFailures += 1
        let failure = error ?? .connectFailed("connection closed during setup", retryable: true)
        let queued = pending
        pending.removeAll()
        for request in queued { request.fail(failure) }
        if case .connectFailed(_, let retryable) = failure, !retryable { return }
        scheduleReconnect()
    }

    private func scheduleReconnect() {
        guard !waitingToReconnect, !isShutdown else { return }
        waitingToReconnect = true
        let delay = shared.settings.reconnectBackoff.delay(afterFailures: consecutiveFailures)
        reconnectDelays.append(delay)
        shared.logger.info("\(shared.settings.label) reconnect scheduled", metadata: [
            "endpoint": "\(shared.settings.endpoint)", "delay": "\(delay)", "failures": "\(consecutiveFailures)",
        ])
        // A timer on the client's clock (on this loop), not a task: shutdown
        // cancels it, and a test's manual clock fires it.
        reconnectTimer = shared.settings.clock.scheduleTimer(after: delay, on: eventLoop) { [self] in
            reconnectTimer = nil
            waitingToReconnect = false
            pump()
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
        let all = Array(draining.values) + (connection.map { [$0] } ?? [])
        return Snapshot(
            open: all.filter { $0.state != .connecting && $0.state != .closed }.count,
            inFlight: all.reduce(0) { $0 + $1.inFlight }, queued: pending.count,
            lastError: lastError, waitingToReconnect: waitingToReconnect, reconnectDelays: reconnectDelays)
    }

    func shutdown() {
        isShutdown = true
        reconnectTimer?.cancel()
        reconnectTimer = nil
        let queued = pending
        pending.removeAll()
        for request in queued { request.fail(.shutdown) }
        connection?.close(error: .shutdown)
        for (_, other) in draining { other.close(error: .shutdown) }
    }
}

/// State every slot of a pool shares.
final class FCMPoolShared: Sendable {
    let settings: FCMPoolSettings
    let tls: TLSContext
    let logger: Logger
    private let connectionIDs = Atomic<Int>(0)

    init(settings: FCMPoolSettings, tls: TLSContext, logger: Logger) {
        self.settings = settings
        self.logger = logger
        self.tls = tls
    }

    func nextConnectionID() -> Int { connectionIDs.add(1, ordering: .relaxed).newValue }
}
