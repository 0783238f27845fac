import FCM
import HeraldCore
import HeraldPrimitives
import HeraldProtos
import HeraldStorage
import HeraldTestSupport
import Logging
import Synchronization
import Testing

@testable import HeraldService

/// The dispatcher's Android path: an in-memory store, the fake gateway with
/// a fake FCM client, a manual clock.
@Suite("Dispatcher on Android (FCM)", .timeLimit(.minutes(1)))
struct FCMDispatchTests {
    static let bundle = "com.example.android"
    static let token = "fcm-token_1:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"
    static let due: Int64 = 1_800_000_000_000

    struct Rig {
        let store = InMemoryStore()
        let fcm: FakeFCMSender
        let gateway: FakeAPNsGateway
        let clock = ManualClock(now: FCMDispatchTests.due)
        let dispatcher: Dispatcher
        let handOvers: Task<Void, Never>
        let watch = Watch()

        init(fcmBundles: Set<String> = ["*"]) {
            let (store, watch) = (store, watch)
            fcm = FakeFCMSender { _ in
                let id = watch.messageID.withLock { $0 }
                let tokens = (try? await store.handOvers(messageID: id, push: FCMDispatchTests.due)) ?? []
                watch.marksAtSend.withLock { $0.append(tokens) }
            }
            gateway = FakeAPNsGateway(fcm: fcm, fcmBundleIDs: fcmBundles)
            let logger = Logger(label: "test")
            let scheduler = Scheduler(clock: clock, logger: logger)
            let dispatcher = Dispatcher(
                store: store, providers: gateway.providers, clock: clock, scheduler: scheduler, logger: logger, decode: StoredRequest.decode)
            self.dispatcher = dispatcher
            handOvers = Task { await dispatcher.run() }
        }

        func close() async {
            dispatcher.finish()
            await handOvers.value
        }

        func register(_ token: String = FCMDispatchTests.token, platform: Platform = .android, locale: String = "de-CH") async throws {
            _ = try await store.registerDevice(Device(
                bundleID: FCMDispatchTests.bundle, platform: platform, userID: "u1", deviceToken: token, locale: locale,
                timezone: "UTC", environment: platform == .ios ? .production : nil, registeredAt: FCMDispatchTests.due - 10_000))
        }

        func schedule(key: String, platform: Platform = .android, contextAware: Bool = false) async throws -> StoredMessage {
            let message = StoredMessage(
                id: UUIDv7.make(now: FCMDispatchTests.due), bundleID: FCMDispatchTests.bundle, platform: platform, userID: "u1",
                campaignID: "c1", idempotencyKey: key, deliveryMethod: contextAware ? .contextAware : .traditional, abTest: false,
                windowStart: FCMDispatchTests.due, windowEnd: FCMDispatchTests.due + 3_600_000, dueAt: FCMDispatchTests.due,
                request: FCMDispatchTests.requestBytes(key: key, platform: platform), createdAt: FCMDispatchTests.due - 1000)
            guard case .scheduled(let stored, _) = try await store.schedule(message) else { throw Unexpected() }
            return stored
        }
    }

    struct Unexpected: Error {}

    /// Per request: the hand-over marks of `messageID` in the store when it was sent.
    final class Watch: Sendable {
        let marksAtSend = Mutex<[[String]]>([])
        let messageID = Mutex("")
    }

    /// Real ScheduleRequest bytes: title and body in en and de, priority HIGH, ttl 600 s, collapse id.
    static func requestBytes(key: String, platform: Platform) -> [UInt8] {
        let arena = CArena()
        var request = Herald__V1__ScheduleRequest.initialized()
        request.bundle_id = arena.string(bundle)
        request.platform = platform == .ios ? HERALD__V1__PLATFORM__PLATFORM_IOS : HERALD__V1__PLATFORM__PLATFORM_ANDROID
        request.user_id = arena.string("u1")
        request.campaign_id = arena.string("c1")
        request.idempotency_key = arena.string(key)
        request.priority = HERALD__V1__PRIORITY__PRIORITY_HIGH
        request.ttl_case = HERALD__V1__SCHEDULE_REQUEST__TTL_TTL_SECONDS
        request.ttl_seconds = 600
        request.collapse_id = arena.string("daily")
        request.content = arena.message(Herald__V1__Content.self) { content in
            content.title = arena.message(Herald__V1__LocalizedText.self) {
                $0.single_case = HERALD__V1__LOCALIZED_TEXT__SINGLE_TEXT
                $0.text = arena.string("Hello")
            }
            content.body = arena.message(Herald__V1__LocalizedText.self) {
                $0.single_case = HERALD__V1__LOCALIZED_TEXT__SINGLE_TEXT
                $0.text = arena.string("World")
            }
        }
        return withExtendedLifetime(arena) { ProtobufC.pack(&request) }
    }

    static func rendered(_ stored: StoredMessage, locale: String, token: String = token) throws -> String {
        let message = try StoredRequest.decode(stored.request, idempotencyKey: stored.idempotencyKey)
        return try FCMRenderer.render(message, locale: locale, deviceToken: token).messageJSON
    }

    // Hostile first: the provider's refusals and failures.

    @Test func unregisteredRemovesTheDeviceAndFailsTheMessage() async throws {
        let rig = Rig()
        try await rig.register()
        rig.fcm.answer(Self.token, with: .refused(status: 404, code: .unregistered, message: "Requested entity was not found."))
        let stored = try await rig.schedule(key: "gone")
        await rig.dispatcher.dispatch(stored.id)
        await rig.close()
        #expect(try await rig.store.message(id: stored.id)?.state == .failed)
        let outcome = try #require(try await rig.store.outcomes(messageID: stored.id).first)
        #expect(outcome.kind == .unregistered)
        #expect(outcome.reason?.hasPrefix("UNREGISTERED") == true)
        #expect(outcome.httpStatus == 404)
        #expect(try await rig.store.devices(bundleID: Self.bundle, platform: .android, userID: "u1").isEmpty)
    }

    @Test func senderIDMismatchRemovesTheDevice() async throws {
        let rig = Rig()
        try await rig.register()
        rig.fcm.answer(Self.token, with: .refused(status: 403, code: .senderIDMismatch))
        let stored = try await rig.schedule(key: "other-sender")
        await rig.dispatcher.dispatch(stored.id)
        await rig.close()
        #expect(try await rig.store.outcomes(messageID: stored.id).map(\.kind) == [.badDeviceToken])
        #expect(try await rig.store.devices(bundleID: Self.bundle, platform: .android, userID: "u1").isEmpty)
    }

    @Test func invalidArgumentNamesTheFieldAndKeepsTheDevice() async throws {
        let rig = Rig()
        try await rig.register()
        rig.fcm.answer(Self.token, with: .refused(
            status: 400, code: .invalidArgument, message: "Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration)"))
        let stored = try await rig.schedule(key: "bad-field")
        await rig.dispatcher.dispatch(stored.id)
        await rig.close()
        let outcome = try #require(try await rig.store.outcomes(messageID: stored.id).first)
        #expect(outcome.kind == .rejected)
        #expect(outcome.reason?.contains("message.android.ttl") == true)
        #expect(try await rig.store.devices(bundleID: Self.bundle, platform: .android, userID: "u1").count == 1)
        #expect(try await rig.store.message(id: stored.id)?.lastError?.contains("INVALID_ARGUMENT") == true)
    }

    @Test func invalidArgumentAboutTheTokenIsABadDeviceToken() async throws {
        let rig = Rig()
        try await rig.register()
        rig.fcm.answer(Self.token, with: .refused(
            status: 400, code: .invalidArgument, message: "The registration token is not a valid FCM registration token"))
        let stored = try await rig.schedule(key: "bad-token")
        await rig.dispatcher.dispatch(stored.id)
        await rig.close()
        #expect(try await rig.store.outcomes(messageID: stored.id).map(\.kind) == [.badDeviceToken])
        #expect(try await rig.store.devices(bundleID: Self.bundle, platform: .android, userID: "u1").isEmpty)
    }

    @Test func thirdPartyAuthErrorFailsAndKeepsTheDevice() async throws {
        let rig = Rig()
        try await rig.register()
        rig.fcm.answer(Self.token, with: .refused(status: 401, code: .thirdPartyAuthError, message: "APNs certificate invalid"))
        let stored = try await rig.schedule(key: "auth")
        await rig.dispatcher.dispatch(stored.id)
        await rig.close()
        #expect(try await rig.store.message(id: stored.id)?.state == .failed)
        #expect(try await rig.store.outcomes(messageID: stored.id).first?.reason?.hasPrefix("THIRD_PARTY_AUTH_ERROR") == true)
        #expect(try await rig.store.devices(bundleID: Self.bundle, platform: .android, userID: "u1").count == 1)
    }

    @Test func retriesRunningOutOfTimeExpire() async throws {
        let rig = Rig()
        try await rig.register()
        rig.fcm.fail(Self.token, with: .deadlineExceeded)
        let stored = try await rig.schedule(key: "late")
        await rig.dispatcher.dispatch(stored.id)
        await rig.close()
        #expect(try await rig.store.message(id: stored.id)?.state == .expired)
    }

    @Test func noFCMRouteForTheBundleFailsTheDevice() async throws {
        let rig = Rig(fcmBundles: ["com.example.other"])
        try await rig.register()
        let stored = try await rig.schedule(key: "unrouted")
        await rig.dispatcher.dispatch(stored.id)
        await rig.close()
        #expect(rig.fcm.sent.isEmpty)
        #expect(try await rig.store.outcomes(messageID: stored.id).first?.reason == "no FCM route for \(Self.bundle)")
    }

    // The paths that deliver.

    @Test func theAlertIsTheRenderedMessageInTheDevicesLocale() async throws {
        let rig = Rig()
        try await rig.register()
        let stored = try await rig.schedule(key: "hello")
        rig.watch.messageID.withLock { $0 = stored.id }
        await rig.dispatcher.dispatch(stored.id)
        await rig.close()
        let sent = try #require(rig.fcm.sent.first)
        #expect(rig.fcm.sent.count == 1)
        #expect(sent.projectID == FakeAPNsGateway.fcmProject)
        #expect(sent.deviceToken == Self.token)
        #expect(!sent.singleAttempt)
        #expect(sent.bodyText == (try Self.rendered(stored, locale: "de-CH")))
        #expect(sent.bodyText.contains("\"priority\":\"HIGH\""))
        #expect(sent.bodyText.contains("\"ttl\":\"600s\""))
        #expect(sent.bodyText.contains("\"collapse_key\":\"daily\""))
        #expect(try await rig.store.message(id: stored.id)?.state == .sent)
        let outcome = try #require(try await rig.store.outcomes(messageID: stored.id).first)
        #expect(outcome.kind == .sent)
        #expect(outcome.providerMessageID == "projects/\(FakeAPNsGateway.fcmProject)/messages/1")
        #expect(outcome.environment == nil)
        // The hand-over mark was written before the send (SPEC §4).
        #expect(rig.watch.marksAtSend.withLock { $0 } == [[Self.token]])
    }

    @Test func aUserWithBothPlatformsGetsEachPlatformsMessage() async throws {
        let rig = Rig()
        try await rig.register()
        let iosToken = String(repeating: "ab", count: 32)
        try await rig.register(iosToken, platform: .ios, locale: "en")
        let android = try await rig.schedule(key: "both-a")
        let ios = try await rig.schedule(key: "both-i", platform: .ios)
        await rig.dispatcher.dispatch(android.id)
        await rig.dispatcher.dispatch(ios.id)
        await rig.close()
        #expect(rig.fcm.sent.map(\.deviceToken) == [Self.token])
        #expect(rig.gateway.sent.map(\.deviceToken) == [iosToken])
        #expect(try await rig.store.message(id: android.id)?.state == .sent)
        #expect(try await rig.store.message(id: ios.id)?.state == .sent)
    }

    @Test func theContextAwareHandoffIsDataOnlyAndTheRevokeToo() async throws {
        let rig = Rig()
        try await rig.register()
        let stored = try await rig.schedule(key: "ctx", contextAware: true)
        await rig.dispatcher.dispatch(stored.id)
        let handedOff = try #require(try await rig.store.message(id: stored.id))
        #expect(handedOff.state == .handedOff)
        let handoff = try #require(rig.fcm.sent.first)
        let body = try JSONParser.parse(handoff.body)
        guard case .object(let root) = body, case .object(let message)? = root["message"],
              case .object(let data)? = message["data"], case .object(let android)? = message["android"] else {
            Issue.record("not an FCM message: \(handoff.bodyText)")
            return
        }
        #expect(message["notification"] == nil)  // data only: the app decides when to present
        #expect(android["priority"] == .string("HIGH"))
        #expect(android["collapse_key"] == nil)
        #expect(android["ttl"] == .string("600s"))
        #expect(data["ctx_idempotency_key"] == .string("ctx"))
        #expect(data["ctx_window_end"] == .string(RFC3339.format(Timestamp(milliseconds: Self.due + 3_600_000))))
        #expect(data["ctx_notification"] == .string(#"{"title":"Hello","body":"World"}"#))
        #expect(try await rig.store.outcomes(messageID: stored.id).map(\.kind) == [.handedOff])

        await rig.dispatcher.revoke(handedOff)
        await rig.close()
        let revoke = try #require(rig.fcm.sent.last)
        #expect(rig.fcm.sent.count == 2)
        #expect(revoke.singleAttempt)
        #expect(revoke.bodyText.hasPrefix(#"{"message":{"token":"\#(Self.token)","data":{"ctx_revoke":"ctx"},"android":{"priority":"HIGH","ttl":""#))
        #expect(try await rig.store.outcomes(messageID: stored.id).map(\.kind).contains(.revoked))
    }
}
