import APNs
import GRPCEngine
import HeraldCore
import HeraldPrimitives
import HeraldProtos
import HeraldStorage
import HeraldTestSupport
import Logging
import ServiceLifecycle

@testable import HeraldService

/// Herald's delivery wiring in process: the handlers as the server registers
/// them (`DeliveryRoutes`), an in-memory store, a fake APNs gateway, a
/// manual clock, and `DeliveryService` (scheduler, dispatcher, hand-over
/// log, revokes) run by a `ServiceGroup` as under `herald serve`.
struct DeliveryWiring {
    static let bundle = "com.example.wiring"
    static let deviceToken = String(repeating: "ab", count: 32)
    static let start: Int64 = 1_800_000_000_000

    let store = InMemoryStore()
    let gateway: FakeAPNsGateway
    let clock = ManualClock(now: start)
    let scheduler: Scheduler
    let dispatcher: Dispatcher
    let revokes = RevokeQueue()
    let logger = Logger(label: "test")
    private let routes: [String: GRPCUnaryHandler]

    init(policy: AccessPolicy = AccessPolicy(), gateway: FakeAPNsGateway = FakeAPNsGateway()) {
        self.gateway = gateway
        scheduler = Scheduler(clock: clock, logger: logger)
        dispatcher = Dispatcher(
            store: store, providers: gateway.providers, clock: clock, scheduler: scheduler, logger: logger, decode: StoredRequest.decode)
        let routes = DeliveryRoutes(policy: policy, clock: clock, split: ABSplit(contextAwareShare: 0.5), graceSeconds: 30)
        self.routes = Dictionary(uniqueKeysWithValues: routes.handlers(store: store, scheduler: scheduler, revokes: revokes)
            .map { ($0.path, $0.handler) })
    }

    /// Calls the handler registered for `path`, as the server would.
    func call(_ path: String, _ message: [UInt8], token: String? = nil) async throws -> [UInt8] {
        guard let handler = routes[path] else { throw GRPCStatus(.unimplemented, path) }
        let metadata = GRPCMetadata(token.map { [("authorization", "Token \($0)")] } ?? [])
        return try await handler.callInProcess(GRPCRequest(path: path, metadata: metadata, message: message))
    }

    /// The gRPC status `call` fails with (nil when it succeeds).
    func status(_ path: String, _ message: [UInt8], token: String? = nil) async -> GRPCStatus? {
        do {
            _ = try await call(path, message, token: token)
            return nil
        } catch let status as GRPCStatus {
            return status
        } catch {
            return GRPCStatus(.unknown, "not a gRPC status: \(error)")
        }
    }

    /// Runs delivery around `body`, then shuts it down gracefully (pushes in
    /// flight finish) before returning.
    func withDelivery<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        let service = DeliveryService(
            scheduler: scheduler, dispatcher: dispatcher, revokes: revokes, gateway: GatewayStopper {},
            drainTimeout: .seconds(30), logger: logger)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [service], logger: logger))
        return try await withThrowingTaskGroup(of: Void.self) { children in
            children.addTask { try await group.run() }
            let outcome: Result<T, any Error>
            do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
            await group.triggerGracefulShutdown()
            try await children.waitForAll()
            return try outcome.get()
        }
    }

    // MARK: Requests

    func registerDevice(user: String = "u1", token: String = deviceToken) async throws {
        let arena = CArena()
        var request = Herald__V1__RegisterDeviceRequest.initialized()
        request.bundle_id = arena.string(Self.bundle)
        request.platform = HERALD__V1__PLATFORM__PLATFORM_IOS
        request.user_id = arena.string(user)
        request.device_token = arena.string(token)
        request.locale = arena.string("en")
        request.environment = HERALD__V1__APNS_ENVIRONMENT__APNS_ENVIRONMENT_PRODUCTION
        _ = try await call(DeviceHandlers.registerPath, withExtendedLifetime(arena) { ProtobufC.pack(&request) })
    }

    /// ScheduleRequest bytes: traditional, within an hour of `after`
    /// seconds from the manual clock's start, "Hello" / `body`.
    static func schedule(
        key: String, user: String = "u1", bundle: String = bundle, body: String = "World", after seconds: Int = 60,
        method: Herald__V1__DeliveryMethod = HERALD__V1__DELIVERY_METHOD__DELIVERY_METHOD_TRADITIONAL
    ) -> [UInt8] {
        let arena = CArena()
        var request = Herald__V1__ScheduleRequest.initialized()
        request.bundle_id = arena.string(bundle)
        request.platform = HERALD__V1__PLATFORM__PLATFORM_IOS
        request.user_id = arena.string(user)
        request.campaign_id = arena.string("c1")
        request.idempotency_key = arena.string(key)
        request.delivery_method = method
        request.deliver_after = arena.string(RFC3339.format(Timestamp(milliseconds: start + Int64(seconds) * 1000)))
        request.window_case = HERALD__V1__SCHEDULE_REQUEST__WINDOW_DELIVER_WITHIN_HOURS
        request.deliver_within_hours = 1
        request.content = arena.message(Herald__V1__Content.self) { content in
            content.title = arena.message(Herald__V1__LocalizedText.self) {
                $0.single_case = HERALD__V1__LOCALIZED_TEXT__SINGLE_TEXT
                $0.text = arena.string("Hello")
            }
            content.body = arena.message(Herald__V1__LocalizedText.self) {
                $0.single_case = HERALD__V1__LOCALIZED_TEXT__SINGLE_TEXT
                $0.text = arena.string(body)
            }
        }
        return withExtendedLifetime(arena) { ProtobufC.pack(&request) }
    }

    static func cancel(key: String, user: String = "u1") -> [UInt8] {
        let arena = CArena()
        var request = Herald__V1__CancelRequest.initialized()
        request.bundle_id = arena.string(bundle)
        request.platform = HERALD__V1__PLATFORM__PLATFORM_IOS
        request.user_id = arena.string(user)
        request.campaign_id = arena.string("c1")
        request.idempotency_key = arena.string(key)
        return withExtendedLifetime(arena) { ProtobufC.pack(&request) }
    }

    // MARK: Responses

    struct Scheduled {
        var messageID: String
        var replaced: Bool
        var state: Herald__V1__MessageState
    }

    func schedule(
        key: String, body: String = "World", after seconds: Int = 60,
        method: Herald__V1__DeliveryMethod = HERALD__V1__DELIVERY_METHOD__DELIVERY_METHOD_TRADITIONAL
    ) async throws -> Scheduled {
        let bytes = try await call(ScheduleService.path, Self.schedule(key: key, body: body, after: seconds, method: method))
        return try ProtobufC.withUnpacked(Herald__V1__ScheduleResponse.self, from: bytes) { wire in
            Scheduled(messageID: String(cString: wire.message_id), replaced: wire.replaced != 0, state: wire.state)
        }
    }

    func cancel(key: String) async throws -> (cancelled: Bool, state: Herald__V1__MessageState) {
        let bytes = try await call(CancelService.path, Self.cancel(key: key))
        return try ProtobufC.withUnpacked(Herald__V1__CancelResponse.self, from: bytes) { ($0.cancelled != 0, $0.state) }
    }

    /// ReportEvent DISPLAYED from the registered device; returns the state.
    func reportDisplayed(key: String) async throws -> Herald__V1__MessageState {
        let arena = CArena()
        var request = Herald__V1__ReportEventRequest.initialized()
        request.bundle_id = arena.string(Self.bundle)
        request.platform = HERALD__V1__PLATFORM__PLATFORM_IOS
        request.user_id = arena.string("u1")
        request.idempotency_key = arena.string(key)
        request.event = HERALD__V1__MESSAGE_EVENT__MESSAGE_EVENT_DISPLAYED
        request.device_token = arena.string(Self.deviceToken)
        let bytes = try await call(ReportEventService.path, withExtendedLifetime(arena) { ProtobufC.pack(&request) })
        return try ProtobufC.withUnpacked(Herald__V1__ReportEventResponse.self, from: bytes) { $0.state }
    }

    /// Moves the clock to the messages' due time (`after` seconds).
    func advance(seconds: Int = 60) {
        clock.advance(to: Self.start + Int64(seconds) * 1000)
    }
}
