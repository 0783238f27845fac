public import HeraldCore
public import HeraldStorage

/// What the dispatcher needs from one push platform (APNs for iOS, FCM for
/// Android, …): the route a device's pushes take, and the rendering and
/// sending of one push on that route. An adapter target implements it for
/// each platform; the dispatcher holds one per platform in a
/// ``ProviderRegistry`` and never names a provider.
public protocol PushProvider: Sendable {
    /// The device platform this provider delivers to.
    var platform: Platform { get }

    /// The route `device`'s pushes for `bundleID` take now, or why there is none.
    func route(bundleID: String, device: Device) -> Result<any PushRoute, NoRoute>

    /// Why no route of this provider could ever deliver a message for
    /// `bundleID` (Schedule then refuses it, FAILED_PRECONDITION, storing
    /// nothing), saying how to add one; nil when some route could.
    func missingRoute(bundleID: String) -> String?

    /// What may still keep a message for `bundleID` from `devices` (the
    /// user's devices on this platform, at least one) though a route serves
    /// the bundle, and can change before it is due: Schedule's warnings.
    /// None by default.
    func routeWarnings(bundleID: String, devices: [Device]) -> [String]

    /// Shuts the provider's clients (and any bundled simulator) down; sends
    /// still in flight end interrupted.
    func shutdown() async

    /// Its connection pools now, for Status and `/metrics`.
    func poolReports() async -> [ProviderPoolReport]
}

extension PushProvider {
    /// No warnings: every device of a routed bundle is reachable.
    public func routeWarnings(bundleID: String, devices: [Device]) -> [String] { [] }
}

/// One route of a provider (a client and its connection pool): messages are
/// admitted per route (``admission``), and a push is rendered for the
/// route's devices before any of them is sent.
public protocol PushRoute: Sendable {
    /// The route's admission identity: routes with the same identity share
    /// one admission gate (one pool, one in-flight limit).
    var admission: ObjectIdentifier { get }

    /// Renders `push` for `devices` (a provider may render once per locale)
    /// and returns one send per device, in the same order.
    func prepare(_ push: ProviderPush, for devices: [Device]) -> [any PreparedPush]
}

/// One device's rendered push, ready to go.
public protocol PreparedPush: Sendable {
    /// Sends it. With `willHandOver`, the provider's client calls it when the
    /// request is about to leave on a stream, and sends nothing when it
    /// fails (the crash rule: SPEC §4).
    func send(willHandOver: HandOverHook?) async -> ProviderResult
}

/// Called when a request is about to be written; `done` is called once the
/// hand-over is recorded (nil) or could not be (the request is not sent).
/// The same shape as the APNs and FCM clients' hooks.
public typealias HandOverHook = @Sendable (_ done: @escaping @Sendable ((any Error)?) -> Void) -> Void

/// Why a device has no route (kept as its outcome's reason).
public struct NoRoute: Error, Sendable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}
