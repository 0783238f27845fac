import APNs
public import HeraldCore
import HeraldPrimitives
public import HeraldStorage
public import PushProviders

/// The APNs adapter: routes iOS devices to an APNs client by bundle and
/// environment, renders each push (once per locale), sends it and maps the
/// answer to a neutral ``ProviderResult``.
public struct APNsPushProvider<Routing: APNsRouting>: PushProvider {
    public let routing: Routing

    public init(routing: Routing) {
        self.routing = routing
    }

    public var platform: Platform { .ios }

    public func route(bundleID: String, device: Device) -> Result<any PushRoute, NoRoute> {
        guard let client = routing.client(bundleID: bundleID, environment: device.environment) else {
            return .failure(NoRoute("no APNs route for \(bundleID) (\(device.environment?.rawValue ?? "production"))"))
        }
        return .success(APNsRoute(routing: routing, client: client))
    }

    public func missingRoute(bundleID: String) -> String? {
        guard routing.environments(serving: bundleID).isEmpty else { return nil }
        return "no APNs route serves this bundle (add one with --apns-route … bundles=\(bundleID))"
    }

    /// Warns when every device is in an environment no route serves for the bundle.
    public func routeWarnings(bundleID: String, devices: [Device]) -> [String] {
        let routed = routing.environments(serving: bundleID)
        let environments = Set(devices.map { $0.environment ?? .production })
        guard routed.isDisjoint(with: environments) else { return [] }
        let have = environments.map(\.rawValue).sorted().joined(separator: ", ")
        let served = routed.map(\.rawValue).sorted().joined(separator: ", ")
        return ["the user's devices in \(ErrorText.quote(bundleID)) are all \(have); APNs routes for it serve only \(served): "
                + "the message fails unless a device registers in a routed environment before it is due"]
    }

    public func shutdown() async {
        await routing.shutdown()
    }

    public func poolReports() async -> [ProviderPoolReport] {
        await routing.poolReports()
    }
}

/// One APNs client's route.
struct APNsRoute<Routing: APNsRouting>: PushRoute {
    let routing: Routing
    let client: Routing.APNsSender

    var admission: ObjectIdentifier { ObjectIdentifier(client) }

    func prepare(_ push: ProviderPush, for devices: [Device]) -> [any PreparedPush] {
        let renderings: [Result<APNsRendering, RenderError>?]
        switch push.kind {
        case .revoke:
            renderings = devices.map { device in
                .success(APNsRenderer.renderRevoke(
                    bundleID: push.bundleID, idempotencyKey: push.idempotencyKey ?? "", deviceToken: device.deviceToken,
                    apnsID: UUIDv4.make(), expiresAt: push.windowEnd))
            }
        case .alert, .handoff:
            renderings = render(push, for: devices)
        }
        return zip(devices, renderings).map { device, rendering in
            APNsSend(routing: routing, client: client, deviceToken: device.deviceToken, bundleID: device.bundleID,
                     rendering: rendering, deadline: push.deadline, singleAttempt: push.singleAttempt, now: push.now)
        }
    }

    /// Renders an alert or hand-off for each device, once per locale.
    private func render(_ push: ProviderPush, for devices: [Device]) -> [Result<APNsRendering, RenderError>?] {
        guard let message = push.message else { return devices.map { _ in nil } }
        var renderings = APNsRenderings()
        return devices.map { device in
            // With quiet periods, a hand-off differs by time zone too.
            let quiet = push.kind == .handoff ? push.quiet?(device.timezone) ?? [] : []
            let key = quiet.isEmpty ? device.locale : device.locale + "\u{0}" + device.timezone
            return renderings.rendering(locale: key, deviceToken: device.deviceToken, apnsID: UUIDv4.make()) {
                apnsID throws(RenderError) in
                switch push.kind {
                case .handoff:
                    try APNsRenderer.renderHandoff(
                        message, locale: device.locale, deviceToken: device.deviceToken, apnsID: apnsID,
                        sendTime: push.sendTime, windowEnd: push.windowEnd, quiet: quiet)
                default:
                    try APNsRenderer.render(
                        message, locale: device.locale, deviceToken: device.deviceToken, apnsID: apnsID, sendTime: push.sendTime)
                }
            }
        }
    }
}

/// One device's APNs request, rendered.
struct APNsSend<Routing: APNsRouting>: PreparedPush {
    let routing: Routing
    let client: Routing.APNsSender
    let deviceToken: String
    let bundleID: String
    /// nil: nothing to render (an alert without its message).
    let rendering: Result<APNsRendering, RenderError>?
    let deadline: Timestamp
    let singleAttempt: Bool
    let now: @Sendable () -> Int64

    func send(willHandOver: HandOverHook?) async -> ProviderResult {
        let rendering: APNsRendering
        switch self.rendering {
        case .success(let made): rendering = made
        case .failure(let error): return .failed("render: \(error)")
        case nil: return .failed("render: no rendering")
        }
        let request = APNsRequest(
            deviceToken: deviceToken, headers: rendering.headers.map { ($0.name, $0.value) },
            payload: rendering.payload, deadline: deadline, singleAttempt: singleAttempt, willHandOver: willHandOver)
        do {
            let response = try await routing.send(request, with: client)
            if response.isSuccess {
                return .delivered(providerMessageID: response.apnsID ?? rendering.header("apns-id") ?? "", attempts: response.attempts)
            }
            let kind = DeviceOutcomeKind(refusal: response)
            // Unregistered: only a registration older than APNs' verdict (a
            // re-registration since then is a new token life).
            let drop: DeviceDrop = !kind.dropsDevice ? .keep
                : .ifRegisteredBefore(kind == .unregistered ? (response.timestampMilliseconds ?? now()) : .max)
            return .refused(kind, reason: response.reason?.rawValue ?? "HTTP \(response.status)", status: response.status,
                            attempts: response.attempts, drop: drop)
        } catch APNsError.deadlineExceeded {
            return .expired
        } catch APNsError.shutdown, APNsError.cancelled {
            // Cancelled: delivery was torn down (not a graceful stop, which
            // never cancels a push); like a shutdown, left to the crash rule.
            return .interrupted
        } catch {
            return .failed("\(error)")
        }
    }
}
