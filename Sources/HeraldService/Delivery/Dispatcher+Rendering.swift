import APNs
import HeraldCore
import HeraldPrimitives
import HeraldStorage

/// One push's APNs renderings, made once per device locale: the devices of
/// a message that share a locale get the same payload and headers (the
/// renderer reads nothing else of the device but its token, which only
/// names the `:path`); `apns-id` and the path are each request's own. A
/// user with ten devices in one locale costs one render.
struct APNsRenderings {
    private var byLocale: [String: Result<APNsRendering, RenderError>] = [:]

    /// The rendering for a device in `locale`: rendered by `render` the first
    /// time that locale is asked for, then copied with `apnsID` as its id
    /// and `deviceToken`'s path.
    mutating func rendering(
        locale: String, deviceToken: String?, apnsID: String, _ render: (String) throws(RenderError) -> APNsRendering
    ) -> Result<APNsRendering, RenderError> {
        if let made = byLocale[locale] {
            return made.map { Self.with($0, apnsID: apnsID, deviceToken: deviceToken) }
        }
        let made = Result { () throws(RenderError) -> APNsRendering in try render(apnsID) }
        byLocale[locale] = made
        return made
    }

    /// `rendering` with its `apns-id` header set to `apnsID` and its path to `deviceToken`'s.
    static func with(_ rendering: APNsRendering, apnsID: String, deviceToken: String?) -> APNsRendering {
        var copy = rendering
        copy.path = APNsRenderer.path(deviceToken)
        copy.placeholderPath = deviceToken?.isEmpty ?? true
        if let index = copy.headers.firstIndex(where: { $0.name == "apns-id" }) {
            copy.headers[index].value = apnsID
        }
        return copy
    }
}

extension Dispatcher {
    /// Renders `push` for each APNs device of a message, once per locale.
    func renderAPNs(
        _ message: PushMessage, of stored: StoredMessage, push: Push, for devices: [Device], now: Timestamp
    ) -> [Result<APNsRendering, RenderError>] {
        var renderings = APNsRenderings()
        return devices.map { device in
            renderings.rendering(locale: device.locale, deviceToken: device.deviceToken, apnsID: UUIDv4.make()) {
                apnsID throws(RenderError) in
                switch push {
                case .alert:
                    try APNsRenderer.render(
                        message, locale: device.locale, deviceToken: device.deviceToken, apnsID: apnsID, sendTime: now)
                case .handoff:
                    try APNsRenderer.renderHandoff(
                        message, locale: device.locale, deviceToken: device.deviceToken, apnsID: apnsID,
                        sendTime: now, windowEnd: Timestamp(milliseconds: stored.windowEnd))
                }
            }
        }
    }

    /// One device's send of a push: its route and, for APNs, its rendering.
    struct DeviceSend: Sendable {
        var device: Device
        var route: ProviderRoute
        var rendering: Result<APNsRendering, RenderError>?
    }

    /// What every device's send of one push shares.
    struct SendContext: Sendable {
        var message: PushMessage
        var stored: StoredMessage
        var push: Push
        var deadline: Timestamp
        var singleAttempt: Bool
        var pushStart: Int64
    }

    /// Sends one device's push through its route.
    func send(_ one: DeviceSend, _ c: SendContext) async -> DeviceResult {
        switch one.route {
        case .apns(let client):
            let rendering: APNsRendering
            switch one.rendering {
            case .success(let made): rendering = made
            case .failure(let error): return .failed("render: \(error)")
            case nil: return .failed("render: no rendering")
            }
            return await send(rendering, to: one.device, with: client, deadline: c.deadline, singleAttempt: c.singleAttempt,
                              willHandOver: handOvers.hook(messageID: c.stored.id, deviceToken: one.device.deviceToken,
                                                           push: c.pushStart))
        case .fcm(let sender, let projectID):
            return await sendFCM(c.message, of: c.stored, push: c.push, to: one.device, with: sender, projectID: projectID,
                                 deadline: c.deadline, singleAttempt: c.singleAttempt, pushStart: c.pushStart)
        }
    }
}
