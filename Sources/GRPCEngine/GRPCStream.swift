import CInterop
import HTTP2Core
import NIOCore
import Synchronization

/// Per-stream state of one call. Confined to its connection's event loop: a
/// handler's Task carries it back to the loop in a `NIOLoopBound`.
final class GRPCStream {
    let id: Int32
    /// Where the call is in its life (receiving → running → responded → closed).
    var machine = GRPCStreamStateMachine()
    var phase: GRPCStreamStateMachine.State { machine.state }

    /// When the request's HEADERS began: its whole request must arrive within
    /// `requestReceiveTimeout` of this.
    let receiveStartedAt: NIODeadline

    // Request headers.
    // @exclusivity(unchecked): loop-confined, and no access to these overlaps
    // another; the runtime check cost ~75 instructions per access.
    @exclusivity(unchecked) var path: String?
    /// Unowned: the server's routes (`GRPCServerShared.routes`, immutable)
    /// outlive every connection and stream, and a counted reference would
    /// make every loop write the route's shared reference count per call.
    @exclusivity(unchecked) unowned(unsafe) var route: GRPCRoute?
    var isPost = false
    var isHead = false
    var contentType: ContentType = .absent
    var timeout: GRPCTimeout?
    var timeoutInvalid: String?
    @exclusivity(unchecked) var metadata = GRPCMetadata()
    var headerListBytes = 0
    var headerListOverflow = false

    // Request body.
    @exclusivity(unchecked) var deframer: GRPCMessageDeframer
    /// `grpc-encoding: gzip`: compressed messages are inflated.
    var gzip = false
    @exclusivity(unchecked) var message: [UInt8]?
    var extraMessage = false
    var bufferedBytes = 0
    var counted = false
    /// The status sent (-1 until one is): what the call observer is told.
    var finalStatus = -1
    /// What the call observer said about the request.
    var annotation: String?

    // Work in flight.
    /// The `grpc-timeout` deadline, boxed (nil without one): like the
    /// continuations below, `ContinuousClock.Instant` is a resilient type.
    var deadlineBox: GRPCCallDeadline?
    var deadline: ContinuousClock.Instant? { deadlineBox?.instant }
    var deadlineTimer: Scheduled<Void>?
    var task: Task<Void, Never>?
    /// Set while a `.deferred` call (or a large `.compute` one) runs or is queued.
    var cancellation: GRPCCallCancellation?

    /// The response's DATA source, kept alive until nghttp2 closes the stream.
    @exclusivity(unchecked) var responseBody: HTTP2OutboundBody?
    /// `responseBody` is a unary response's, held by nothing else: reusable
    /// once the stream closes.
    @exclusivity(unchecked) var recyclesBody = false

    // Streaming calls.
    /// The continuations of a streaming call, boxed: their types come from the
    /// resilient Concurrency library, and stored here they would make every
    /// stream's layout (and every unary call's init and field access) go
    /// through runtime metadata. Nil for unary calls.
    var streaming: GRPCStreamingState?
    /// Bytes yielded to `inbound` and not yet taken.
    var inboundQueuedBytes = 0
    /// Whether the call's handler is a streaming one (drain cancels it).
    var isStreaming = false

    // Unauthenticated routes (`GRPCRouteLimits.unauthenticated`).
    /// The call's route is unauthenticated: its bytes count against that budget.
    var unauthenticated = false
    /// Holds one of the unauthenticated streaming slots (connection and server).
    var holdsUnauthenticatedSlot = false
    /// Ends the call at `unauthenticatedMaxStreamAge`.
    var ageTimer: Scheduled<Void>?
    /// An unauthenticated streaming call whose handler runs: it does not keep
    /// the connection out of the idle timeout.
    var isBackground = false

    /// A request that is not a gRPC call gets this plain HTTP answer once its
    /// request has ended (END_STREAM), not before: the request is still
    /// checked by nghttp2 to its end (content-length, trailers).
    var pendingAnswer: PendingAnswer?

    enum PendingAnswer {
        case notPost, notGRPC
        /// A plain call (``GRPCPlainCalls``) answered without running.
        case plain(GRPCPlainAnswer)
        /// A plain call run once its body (`plainBody`) has arrived.
        case plainCall(@Sendable ([UInt8], String?, any EventLoop) -> EventLoopFuture<GRPCPlainAnswer>)
    }

    /// A request whose content type is not gRPC's: that content type (for ``GRPCPlainCalls``).
    var plainContentType: String?
    /// A plain call's body as it arrives.
    var plainBody: [UInt8] = []

    /// Links in the connection's `GRPCStreamList` (the list owns `next`).
    @exclusivity(unchecked) var next: GRPCStream?
    @exclusivity(unchecked) unowned(unsafe) var previous: GRPCStream?
    @exclusivity(unchecked) var isListed = false

    /// A bidirectional call whose request messages still flow to the handler.
    var hasInbound: Bool { streaming?.hasInbound ?? false }

    /// The streaming box, created on first use.
    var streamingState: GRPCStreamingState {
        if let streaming { return streaming }
        let created = GRPCStreamingState()
        streaming = created
        return created
    }

    enum ContentType { case absent, grpc, other }

    init(id: Int32, maxMessageBytes: Int, receiveStartedAt: NIODeadline) {
        self.id = id
        self.receiveStartedAt = receiveStartedAt
        self.deframer = GRPCMessageDeframer(maxMessageBytes: maxMessageBytes)
    }
}

/// A connection's open streams: an intrusive doubly linked list, so opening
/// and closing a stream costs a few pointer writes (a `[Int32: GRPCStream]`
/// hashed the stream ID with SipHash on insert and on removal). Holds its
/// streams strongly; confined to the connection's loop.
struct GRPCStreamList {
    private var head: GRPCStream?
    private(set) var count = 0

    var isEmpty: Bool { head == nil }

    mutating func insert(_ stream: GRPCStream) {
        guard !stream.isListed else { return }
        stream.isListed = true
        stream.next = head
        head?.previous = stream
        head = stream
        count += 1
    }

    /// Unlinks `stream` (no effect when it is not listed).
    mutating func remove(_ stream: GRPCStream) {
        guard stream.isListed else { return }
        stream.isListed = false
        let next = stream.next
        if let previous = stream.previous {
            previous.next = next
        } else {
            head = next
        }
        next?.previous = stream.previous
        stream.next = nil
        stream.previous = nil
        count -= 1
    }

    /// The streams, newest first (a copy: the caller may change the list).
    var all: [GRPCStream] {
        var streams: [GRPCStream] = []
        streams.reserveCapacity(count)
        var cursor = head
        while let stream = cursor {
            streams.append(stream)
            cursor = stream.next
        }
        return streams
    }

    /// Unlinks every stream, one at a time (no recursive release of a long chain).
    mutating func removeAll() {
        while let stream = head { remove(stream) }
    }
}

/// What only a streaming call holds (see `GRPCStream.streaming`).
/// Code that names these types looks up their metadata on entry (even on a
/// path that never touches them), so the unary path only reads `hasInbound`
/// and calls the out-of-line `cancel()`.
final class GRPCStreamingState {
    /// Request messages of a bidirectional call, not yet taken by the handler.
    private(set) var inbound: AsyncThrowingStream<[UInt8], any Error>.Continuation?
    /// `inbound != nil`, readable without the continuation's metadata.
    private(set) var hasInbound = false
    /// A `send` waiting for nghttp2 and the socket to take what is queued.
    var waitingWriter: CheckedContinuation<Void, any Error>?

    func open(_ continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation) {
        inbound = continuation
        hasInbound = true
    }

    /// Hands over the request sequence's continuation, once.
    func takeInbound() -> AsyncThrowingStream<[UInt8], any Error>.Continuation? {
        hasInbound = false
        defer { inbound = nil }
        return inbound
    }

    /// The call is over: a waiting writer and the handler's request sequence learn it.
    @inline(never)
    func cancel() {
        if let writer = waitingWriter {
            waitingWriter = nil
            writer.resume(throwing: CancellationError())
        }
        takeInbound()?.finish(throwing: CancellationError())
    }
}

/// A call's deadline (see `GRPCStream.deadlineBox`). Its methods are out of
/// line so that callers never name `ContinuousClock.Instant` (whose metadata
/// would be looked up on entry to them, deadline or not).
final class GRPCCallDeadline: Sendable {
    let instant: ContinuousClock.Instant

    init(_ instant: ContinuousClock.Instant) { self.instant = instant }

    @inline(never)
    init(after duration: Duration) { instant = ContinuousClock.now + duration }

    @inline(never)
    var hasPassed: Bool { instant <= ContinuousClock.now }
}

/// Tells a call running off the loop that its stream is gone (RST_STREAM,
/// deadline, connection loss), so queued work is skipped.
final class GRPCCallCancellation: Sendable {
    private let flag = Atomic<Bool>(false)
    /// What a deferred call asked to run on cancellation (`GRPCReply.onCancel`).
    private let hook = Mutex<(@Sendable () -> Void)?>(nil)

    var isCancelled: Bool { flag.load(ordering: .relaxed) }

    func cancel() {
        guard !flag.exchange(true, ordering: .acquiringAndReleasing) else { return }
        hook.withLock { hook -> (@Sendable () -> Void)? in
            defer { hook = nil }
            return hook
        }?()
    }

    /// Runs `body` on `cancel()`, or at once if that already happened.
    func onCancel(_ body: @escaping @Sendable () -> Void) {
        let now = hook.withLock { hook -> Bool in
            if flag.load(ordering: .acquiring) { return true }
            hook = body
            return false
        }
        if now { body() }
    }
}

/// The compute threads' priority.
enum ComputeThread {
    /// Large calls run at this niceness, below the event loops (0), so the
    /// kernel lets Health and small calls through while they run.
    static let niceness: Int32 = 10

    /// Lowers the calling thread's priority. A syscall per large call: cheap
    /// beside the call, and simpler than per-thread state.
    static func lowerPriority() {
        _ = cinterop_set_current_thread_niceness(niceness)
    }
}
