import NIOCore
import Synchronization

/// How a `.deferred` call answers: once, from any thread. The answer is
/// carried to the connection's event loop and sent there; a second answer,
/// or one after the call ended (deadline, RST_STREAM, connection closed), is
/// dropped.
public final class GRPCReply: Sendable {
    private let loop: any EventLoop
    private let deliver: @Sendable (Result<[UInt8], any Error>) -> Void
    private let answered = Atomic<Bool>(false)
    let cancellation: GRPCCallCancellation

    init(loop: any EventLoop, cancellation: GRPCCallCancellation,
         deliver: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        self.loop = loop
        self.cancellation = cancellation
        self.deliver = deliver
    }

    /// Whether the call ended without this reply (deadline, RST_STREAM,
    /// connection closed): work not yet done can be skipped.
    public var isCancelled: Bool { cancellation.isCancelled }

    /// Runs `body` (once) when the call ends without this reply, or at once
    /// if it already has. It may run on any thread and must not block.
    public func onCancel(_ body: @escaping @Sendable () -> Void) {
        cancellation.onCancel(body)
    }

    /// Answers with `result` (sent on the connection's loop).
    public func answer(_ result: Result<[UInt8], any Error>) {
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        deliver(result)
    }

    /// Runs `body` on the connection's event loop, then answers with what it
    /// returned or threw: for the last, short step of a call (packing the
    /// response) after a wait that ended on another thread. `body` must not
    /// block.
    public func answerOnLoop(_ body: @escaping @Sendable () throws -> [UInt8]) {
        loop.execute { [self] in answer(Result { try body() }) }
    }
}
