import GRPCEngine
import HeraldPrimitives
import NIOCore
import Synchronization

/// The ContextPush web API (SPEC §8): `POST
/// /v1/campaigns/schedule_message_for_user` and `…/cancel_message_for_user`.
/// Each body becomes the protobuf request of the gRPC method and goes
/// through that method's own registered handler (authentication, the
/// token's bundles, validation, the store: one Schedule path); the reply
/// comes back as JSON, an error as `WebAPIError`.
final class ContextPushAPI: Sendable {
    static let schedulePath = "/v1/campaigns/schedule_message_for_user"
    static let cancelPath = "/v1/campaigns/cancel_message_for_user"

    /// One endpoint: its gRPC method's handler and the JSON mapping.
    struct Endpoint: Sendable {
        let grpcPath: String
        let request: @Sendable ([UInt8]) throws(WebAPIError) -> [UInt8]
        let reply: @Sendable ([UInt8]) -> [UInt8]
    }

    static let endpoints: [String: Endpoint] = [
        schedulePath: Endpoint(grpcPath: ScheduleService.path, request: ContextPushRequest.schedule, reply: scheduleReply),
        cancelPath: Endpoint(grpcPath: CancelService.path, request: ContextPushRequest.cancel, reply: cancelReply),
    ]

    /// The gRPC handlers by method path, once the delivery handlers exist
    /// (before that the endpoints answer UNAVAILABLE, as the store is not open).
    private let handlers = Mutex<[String: GRPCUnaryHandler]>([:])
    /// Checks the token on the headers, before the body is read.
    let admission: GRPCAdmission?
    /// Tells the gRPC server's observer (metrics, access log) about each
    /// call that reached a handler, under the gRPC method's name.
    ///
    /// The closure lives in a struct: a function value stored directly as a
    /// `Mutex`'s generic value is re-abstracted on every `withLock` (a
    /// thunk each way, written back), so each read wrapped it deeper until a
    /// call overflowed the stack (a crash after ~25,000 web requests).
    private let recorder = Mutex<CallRecorder?>(nil)

    /// Where finished calls are reported (see `recorder`).
    struct CallRecorder: Sendable {
        let record: @Sendable (GRPCRequest, GRPCStatus.Code, Int64) -> Void
    }

    init(admission: GRPCAdmission?) { self.admission = admission }

    /// Sets where finished calls are reported.
    func record(with recorder: @escaping @Sendable (GRPCRequest, GRPCStatus.Code, Int64) -> Void) {
        self.recorder.withLock { $0 = CallRecorder(record: recorder) }
    }

    /// The recorder in use (each call reads it once).
    func currentRecorder() -> CallRecorder? {
        recorder.withLock { $0 }
    }

    /// Called with each registered delivery handler; keeps Schedule's and Cancel's.
    func register(_ path: String, _ handler: GRPCUnaryHandler) {
        guard path == ScheduleService.path || path == CancelService.path else { return }
        handlers.withLock { $0[path] = handler }
    }

    /// Answers one request: the JSON reply, or the error. Completes on `loop`.
    func call(
        _ endpoint: Endpoint, body: [UInt8], metadata: GRPCMetadata, remoteAddress: String?, deadline: ContinuousClock.Instant,
        on loop: any EventLoop
    ) -> EventLoopFuture<[UInt8]> {
        let message: [UInt8]
        do {
            message = try endpoint.request(body)
        } catch {
            return loop.makeFailedFuture(error)
        }
        guard let handler = handlers.withLock({ $0[endpoint.grpcPath] }) else {
            return loop.makeFailedFuture(WebAPIError(.unavailable, "not serving yet"))
        }
        let request = GRPCRequest(
            path: endpoint.grpcPath, metadata: metadata, message: message, deadline: deadline, remoteAddress: remoteAddress)
        let promise = loop.makePromise(of: [UInt8].self)
        let record = currentRecorder()?.record
        let started = ContinuousClock.now
        promise.completeWithTask {
            var code = GRPCStatus.Code.ok
            defer {
                let (seconds, attoseconds) = (ContinuousClock.now - started).components
                record?(request, code, seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000)
            }
            do {
                return endpoint.reply(try await handler.callInProcess(request, on: loop))
            } catch let status as GRPCStatus {
                code = status.code
                throw WebAPIError(status)
            } catch is CancellationError {
                code = .cancelled
                throw WebAPIError(.cancelled, "cancelled")
            } catch {
                code = .internalError
                throw WebAPIError(.internalError, "internal error")
            }
        }
        return promise.futureResult
    }

    // MARK: - Replies

    /// `MessageState` names, by wire number, as the JSON spells them.
    static let stateNames = [
        "unspecified", "scheduled", "handed_off", "sent", "displayed", "cancelled", "superseded", "failed", "expired",
        "no_devices", "suppressed",
    ]

    static func stateName(_ number: Int) -> String {
        stateNames.indices.contains(number) ? stateNames[number] : "unknown"
    }

    /// `ScheduleResponse` as JSON.
    static func scheduleReply(_ bytes: [UInt8]) -> [UInt8] {
        let fields = ProtoFields(bytes) ?? ProtoFields([])!
        let method = fields.int(3) == 1 ? "context_aware" : fields.int(3) == 2 ? "traditional" : "unspecified"
        return json([
            ("message_id", .string(fields.string(1))),
            ("idempotency_key", .string(fields.string(2))),
            ("delivery_method", .string(method)),
            ("ab_test", .bool(fields.bool(4))),
            ("window_start", .string(fields.string(5))),
            ("window_end", .string(fields.string(6))),
            ("send_at", .string(fields.string(7))),
            ("state", .string(stateName(fields.int(8)))),
            ("replaced", .bool(fields.bool(9))),
            ("warnings", .array((fields.strings[10] ?? []).map { .string($0) })),
        ])
    }

    /// `CancelResponse` as JSON.
    static func cancelReply(_ bytes: [UInt8]) -> [UInt8] {
        let fields = ProtoFields(bytes) ?? ProtoFields([])!
        return json([("cancelled", .bool(fields.bool(1))), ("state", .string(stateName(fields.int(2))))])
    }

    private static func json(_ pairs: [(key: String, value: JSONValue)]) -> [UInt8] {
        var writer = JSONWriter(capacity: 512)
        writer.writeLenient(.object(JSONObject(pairs)))
        return writer.finish()
    }
}
