public import HeraldCore

/// One push's APNs renderings, made once per device locale: the devices of
/// a message that share a locale get the same payload and headers (the
/// renderer reads nothing else of the device but its token, which only
/// names the `:path`); `apns-id` and the path are each request's own. A
/// user with ten devices in one locale costs one render.
public struct APNsRenderings {
    private var byLocale: [String: Result<APNsRendering, RenderError>] = [:]

    public init() {}

    /// The rendering for a device in `locale`: rendered by `render` the first
    /// time that locale is asked for, then copied with `apnsID` as its id
    /// and `deviceToken`'s path.
    public mutating func rendering(
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
