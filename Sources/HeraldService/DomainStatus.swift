import GRPCEngine
import HeraldCore
import HeraldStorage

/// Maps the domain's typed errors to gRPC statuses, in one place.
enum DomainStatus {
    static func status(for error: any Error) -> GRPCStatus? {
        switch error {
        case let status as GRPCStatus:
            return status
        case let validation as ValidationError:
            return GRPCStatus(.invalidArgument, validation.description)
        case RenderError.invalid(let validation):
            return GRPCStatus(.invalidArgument, validation.description)
        case RenderError.disabled(let platform):
            let override = platform == .ios ? "ios" : "android"
            return GRPCStatus(.invalidArgument, "\(override).enabled is false: nothing would be sent to \(override == "ios" ? "APNs" : "FCM")")
        case StoreError.abandoned:
            return GRPCStatus(.deadlineExceeded, "deadline exceeded before the message was stored: nothing was stored")
        case StoreError.readTimedOut(let limit):
            return GRPCStatus(.resourceExhausted, "the read ran past --read-timeout (\(limit)) and was stopped; "
                + "narrow it (a campaign's created range) or retry later")
        case let store as StoreError:
            // Retryable from the caller's side: nothing was acknowledged.
            return GRPCStatus(.unavailable, "store unavailable: \(store)")
        default:
            return nil
        }
    }

    /// A synchronous handler whose domain errors become their gRPC status;
    /// anything else stays INTERNAL (the server logs it).
    static func sync(_ body: @escaping @Sendable (GRPCRequest) throws -> [UInt8]) -> GRPCUnaryHandler {
        .sync { request in
            do { return try body(request) } catch { throw status(for: error) ?? error }
        }
    }

    /// The same for CPU-only work that leaves the loop above `inlineBytes`
    /// of request (see `GRPCUnaryHandler.compute`).
    static func compute(inlineBytes: Int, _ body: @escaping @Sendable (GRPCRequest) throws -> [UInt8]) -> GRPCUnaryHandler {
        .compute(inlineBytes: inlineBytes) { request in
            do { return try body(request) } catch { throw status(for: error) ?? error }
        }
    }

    /// The same for a handler that leaves the event loop.
    static func async(_ body: @escaping @Sendable (GRPCRequest) async throws -> [UInt8]) -> GRPCUnaryHandler {
        .async { request in
            do { return try await body(request) } catch { throw status(for: error) ?? error }
        }
    }

    /// The same for a handler answering through a `GRPCReply` (no Task):
    /// its thrown errors and failed answers become their gRPC status.
    static func deferred(
        inlineBytes: Int, _ body: @escaping @Sendable (GRPCRequest, DomainReply) throws -> Void
    ) -> GRPCUnaryHandler {
        .deferred(inlineBytes: inlineBytes) { request, reply in
            do { try body(request, DomainReply(reply)) } catch { throw status(for: error) ?? error }
        }
    }
}

/// A `GRPCReply` whose failures are mapped like `DomainStatus`'s handlers'.
struct DomainReply: Sendable {
    let reply: GRPCReply

    init(_ reply: GRPCReply) { self.reply = reply }

    /// Runs `body` (once) if the call ends unanswered; see `GRPCReply.onCancel`.
    func onCancel(_ body: @escaping @Sendable () -> Void) { reply.onCancel(body) }

    /// Answers with `body`'s bytes or mapped error, run on the call's loop.
    func answerOnLoop(_ body: @escaping @Sendable () throws -> [UInt8]) {
        reply.answerOnLoop {
            do { return try body() } catch { throw DomainStatus.status(for: error) ?? error }
        }
    }

    /// Answers with `error`, mapped.
    func fail(_ error: any Error) {
        reply.answer(.failure(DomainStatus.status(for: error) ?? error))
    }
}
