public import APNs
public import APNsProvider
import FCM
public import FCMProvider
public import HeraldCore
public import PushProviders
import Synchronization

/// The providers' routing in memory: one APNs client for the bundles it
/// serves, which records every request and answers as told (200 by
/// default), and optionally a ``FakeFCMSender`` for Android. Like the real
/// client, it calls the request's hand-over hook first and sends nothing
/// when the hook fails. ``providers`` puts the real APNs and FCM adapters
/// (rendering, outcome mapping) over them.
public final class FakeAPNsGateway: APNsRouting, FCMRouting, APNsSending {
    /// One request the fake accepted for sending.
    public struct Sent: Sendable {
        public var deviceToken: String
        public var headers: [(name: String, value: String)]
        public var payload: [UInt8]

        public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
        public var payloadText: String { String(decoding: payload, as: UTF8.self) }
    }

    private struct State {
        var sent: [Sent] = []
        var answers: [String: APNsResponse] = [:]
        var held: Set<String> = []
    }

    /// Bundles with a route; `*` serves every bundle.
    public let bundleIDs: Set<String>
    /// Android: the FCM client for `fcmBundleIDs` (nil: no FCM route).
    public let fcm: FakeFCMSender?
    public let fcmBundleIDs: Set<String>
    public static let fcmProject = "test-project"
    private let state = Mutex(State())
    private let stream: AsyncStream<Sent>
    private let continuation: AsyncStream<Sent>.Continuation
    private let releases: AsyncStream<Void>
    private let release: AsyncStream<Void>.Continuation

    public init(bundleIDs: Set<String> = ["*"], fcm: FakeFCMSender? = nil, fcmBundleIDs: Set<String> = ["*"]) {
        self.bundleIDs = bundleIDs
        self.fcm = fcm
        self.fcmBundleIDs = fcmBundleIDs
        (stream, continuation) = AsyncStream.makeStream()
        (releases, release) = AsyncStream.makeStream()
    }

    /// Later requests for `deviceToken` get no answer until `releaseOne()`;
    /// a held request whose task is cancelled throws `APNsError.cancelled`
    /// (withdrawn), as the real client does.
    public func hold(_ deviceToken: String) {
        state.withLock { _ = $0.held.insert(deviceToken) }
    }

    /// Lets one held request go on to its answer.
    public func releaseOne() {
        release.yield()
    }

    /// Every request sent so far, in order.
    public var sent: [Sent] { state.withLock { $0.sent } }

    /// Answers `response` to every later request for `deviceToken`.
    public func answer(_ deviceToken: String, with response: APNsResponse) {
        state.withLock { $0.answers[deviceToken] = response }
    }

    /// Waits for the next `count` requests (in order).
    public func next(_ count: Int) async -> [Sent] {
        var out: [Sent] = []
        for await request in stream {
            out.append(request)
            if out.count == count { break }
        }
        return out
    }

    /// The dispatcher's providers: the APNs and FCM adapters over this fake.
    public var providers: ProviderRegistry {
        ProviderRegistry().registering(APNsPushProvider(routing: self)).registering(FCMPushProvider(routing: self))
    }

    public func client(bundleID: String, environment: APNsEnvironment?) -> FakeAPNsGateway? {
        bundleIDs.contains("*") || bundleIDs.contains(bundleID) ? self : nil
    }

    /// Every environment for a bundle it serves.
    public func environments(serving bundleID: String) -> Set<APNsEnvironment> {
        bundleIDs.contains("*") || bundleIDs.contains(bundleID) ? Set(APNsEnvironment.allCases) : []
    }

    /// Whether its FCM sender serves `bundleID`.
    public func serves(bundleID: String) -> Bool {
        fcm != nil && (fcmBundleIDs.contains("*") || fcmBundleIDs.contains(bundleID))
    }

    /// Nothing to shut down.
    public func shutdown() async {}

    /// No pools.
    public func poolReports() async -> [ProviderPoolReport] { [] }

    public func client(bundleID: String) -> (client: FakeFCMSender, projectID: String)? {
        guard let fcm, fcmBundleIDs.contains("*") || fcmBundleIDs.contains(bundleID) else { return nil }
        return (fcm, Self.fcmProject)
    }

    public func send(_ request: APNsRequest) async throws -> APNsResponse {
        if let hook = request.willHandOver {
            let failure: (any Error)? = await withCheckedContinuation { continuation in
                hook { continuation.resume(returning: $0) }
            }
            if let failure { throw APNsError.handOverNotRecorded("\(failure)") }
        }
        let sent = Sent(deviceToken: request.deviceToken, headers: request.headers, payload: request.payload)
        let (answer, held) = state.withLock { state in
            state.sent.append(sent)
            return (state.answers[request.deviceToken], state.held.contains(request.deviceToken))
        }
        continuation.yield(sent)
        if held {
            for await _ in releases { break }  // nil at once when cancelled
            if Task.isCancelled { throw APNsError.cancelled }
        }
        return answer ?? APNsResponse(status: 200, apnsID: request.header("apns-id"))
    }
}
