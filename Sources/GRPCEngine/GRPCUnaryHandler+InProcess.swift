public import NIOCore
import NIOPosix

extension GRPCUnaryHandler {
    /// Calls the handler in process, without a connection (handler tests,
    /// the fuzz harness): `.sync` and `.compute` run here, `.async` is
    /// awaited, and `.deferred` (Schedule) gets a `GRPCReply` answering on
    /// `loop` (nil: one of the shared group's), whose one answer is awaited.
    /// Nothing is queued for the compute threads and the call is never
    /// cancelled.
    public func callInProcess(_ request: GRPCRequest, on loop: (any EventLoop)? = nil) async throws -> [UInt8] {
        switch self {
        case .sync(let body), .compute(_, let body):
            return try body(request)
        case .async(let body):
            return try await body(request)
        case .deferred(_, let body):
            return try await withCheckedThrowingContinuation { continuation in
                let reply = GRPCReply(
                    loop: loop ?? MultiThreadedEventLoopGroup.singleton.next(), cancellation: GRPCCallCancellation()
                ) { continuation.resume(with: $0) }
                do { try body(request, reply) } catch { reply.answer(.failure(error)) }
            }
        }
    }

    /// Calls the handler in process on `loop` (call it there) and gives its
    /// answer to `completion`, without a Swift task for `.sync`, `.compute`
    /// and `.deferred` handlers (the Connect protocol's calls: one hop fewer
    /// than `callInProcess` per call); `.async` runs in a task. The call is
    /// never cancelled.
    public func callInProcess(
        _ request: GRPCRequest, on loop: any EventLoop,
        completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void
    ) {
        switch self {
        case .sync(let body), .compute(_, let body):
            completion(Result { try body(request) })
        case .async(let body):
            Task {
                do { completion(.success(try await body(request))) } catch { completion(.failure(error)) }
            }
        case .deferred(_, let body):
            let reply = GRPCReply(loop: loop, cancellation: GRPCCallCancellation()) { completion($0) }
            do { try body(request, reply) } catch { reply.answer(.failure(error)) }
        }
    }
}
