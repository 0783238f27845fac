import FCM
public import HeraldCore
import HeraldPrimitives
public import HeraldStorage
public import PushProviders

/// The FCM adapter: routes Android devices to an FCM client by bundle,
/// renders each device's message (in its locale), sends it and maps the
/// answer to a neutral ``ProviderResult`` (``FCMRefusal``).
public struct FCMPushProvider<Routing: FCMRouting>: PushProvider {
    public let routing: Routing

    public init(routing: Routing) {
        self.routing = routing
    }

    public var platform: Platform { .android }

    public func route(bundleID: String, device: Device) -> Result<any PushRoute, NoRoute> {
        guard let route = routing.client(bundleID: bundleID) else {
            return .failure(NoRoute("no FCM route for \(bundleID)"))
        }
        return .success(FCMRoute(routing: routing, client: route.client, projectID: route.projectID))
    }

    public func missingRoute(bundleID: String) -> String? {
        guard !routing.serves(bundleID: bundleID) else { return nil }
        return "no FCM route serves this bundle (add one with --fcm-route … bundles=\(bundleID))"
    }

    public func shutdown() async {
        await routing.shutdown()
    }

    public func poolReports() async -> [ProviderPoolReport] {
        await routing.poolReports()
    }
}

/// One FCM client's route, sending to one Firebase project.
struct FCMRoute<Routing: FCMRouting>: PushRoute {
    let routing: Routing
    let client: Routing.FCMSender
    let projectID: String

    var admission: ObjectIdentifier { ObjectIdentifier(client) }

    func prepare(_ push: ProviderPush, for devices: [Device]) -> [any PreparedPush] {
        devices.map { device in
            let body: Result<[UInt8], RenderError>? = switch push.kind {
            case .revoke:
                .success(FCMRenderer.renderRevoke(
                    idempotencyKey: push.idempotencyKey ?? "", deviceToken: device.deviceToken, sendTime: push.sendTime,
                    expiresAt: push.windowEnd).body)
            case .alert, .handoff:
                push.message.map { message in
                    Result { () throws(RenderError) -> [UInt8] in
                        push.kind == .handoff
                            ? try FCMRenderer.renderHandoff(
                                message, locale: device.locale, deviceToken: device.deviceToken, sendTime: push.sendTime,
                                windowEnd: push.windowEnd, quiet: push.quiet?(device.timezone) ?? []).body
                            : try FCMRenderer.render(message, locale: device.locale, deviceToken: device.deviceToken).body
                    }
                }
            }
            // A revoke is data only, one attempt: the handed-off content
            // expires at the window end anyway.
            return FCMSend(routing: routing, client: client, projectID: projectID, device: device, body: body,
                           deadline: push.deadline, singleAttempt: push.singleAttempt || push.kind == .revoke, now: push.now)
        }
    }
}

/// One device's FCM message, rendered.
struct FCMSend<Routing: FCMRouting>: PreparedPush {
    let routing: Routing
    let client: Routing.FCMSender
    let projectID: String
    let device: Device
    /// nil: nothing to render (an alert without its message).
    let body: Result<[UInt8], RenderError>?
    let deadline: Timestamp
    let singleAttempt: Bool
    let now: @Sendable () -> Int64

    /// Sends the body. With `willHandOver`, the client calls it when the
    /// request is about to leave on a stream (token, rate bucket and
    /// connection ready), and the device's hand-over mark is recorded then
    /// (SPEC §4: a crash after it leaves the device UNCONFIRMED, never
    /// resent); when it cannot be, nothing is sent.
    func send(willHandOver: HandOverHook?) async -> ProviderResult {
        let body: [UInt8]
        switch self.body {
        case .success(let made): body = made
        case .failure(let error): return .failed("render: \(error)")
        case nil: return .failed("render: no rendering")
        }
        let request = FCMRequest(
            projectID: projectID, deviceToken: device.deviceToken, body: body, deadline: deadline, singleAttempt: singleAttempt,
            willHandOver: willHandOver)
        let sentAt = now()
        do {
            let response = try await routing.send(request, with: client)
            if response.isSuccess { return .delivered(providerMessageID: response.messageName ?? "", attempts: response.attempts) }
            let refusal = FCMRefusal(response)
            // Unregistered: only a registration older than this send (a
            // re-registration since is a new token life).
            let drop: DeviceDrop = !refusal.kind.dropsDevice ? .keep
                : .ifRegisteredBefore(refusal.kind == .unregistered ? sentAt + 1 : .max)
            return .refused(refusal.kind, reason: refusal.reason, status: response.status, attempts: response.attempts, drop: drop)
        } catch FCMError.deadlineExceeded {
            return .expired
        } catch FCMError.shutdown {
            return .interrupted
        } catch is CancellationError {
            return .interrupted
        } catch {
            return .failed("\(error)")
        }
    }
}
