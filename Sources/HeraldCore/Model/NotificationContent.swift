public import HeraldPrimitives

/// A text field given either once or per locale (`herald.v1.LocalizedText`).
public enum LocalizedText: Sendable, Hashable {
    /// The same text for every locale.
    case text(String)
    /// Locale tag → text, sorted by tag. All translated fields of one
    /// message must name the same locales, and `default_locale` must be one
    /// of them.
    case translations(SortedMap<String>)

    /// The translation map, when translated.
    public var translations: SortedMap<String>? {
        if case .translations(let t) = self { return t }
        return nil
    }

    /// The text in a locale already resolved against this message's locale
    /// set (see ``LocaleResolver``): the single text, or the translation whose
    /// tag equals `locale` (case-insensitively, `_` = `-`).
    public func text(in locale: String?) -> String? {
        switch self {
        case .text(let s):
            return s
        case .translations(let t):
            guard let locale else { return nil }
            // `locale` is normally spelled exactly as one of the keys.
            if let s = t[locale] { return s }
            for (k, v) in t where LocaleResolver.tagsEqual(k, locale) { return v }
            return nil
        }
    }
}

/// What the user sees (`herald.v1.Content`).
///
/// Optional strings that are empty are treated as unset (proto3 strings
/// cannot be absent).
public struct NotificationContent: Sendable, Hashable {
    /// Required.
    public var title: LocalizedText?
    /// Optional.
    public var subtitle: LocalizedText?
    /// Required.
    public var body: LocalizedText?
    /// Required when any field is translated; one of the translated locales.
    public var defaultLocale: String?
    /// A sound file name in the app bundle, or `default`.
    public var sound: String?
    /// The app icon badge; 0 clears it; must be ≥ 0.
    public var badge: Int32?
    /// Custom data placed at the top level of the APNs payload and in FCM
    /// `data`. Must not contain `aps` or keys starting `ctx_`.
    public var userInfo: JSONObject
    /// `aps.thread-id`: groups notifications.
    public var threadID: String?
    /// An https image the notification service extension attaches.
    public var imageURL: String?
    /// `aps.category`: the notification category for actions.
    public var category: String?

    /// Creates content; see the properties for the rules ``Validator`` checks.
    public init(
        title: LocalizedText? = nil,
        subtitle: LocalizedText? = nil,
        body: LocalizedText? = nil,
        defaultLocale: String? = nil,
        sound: String? = nil,
        badge: Int32? = nil,
        userInfo: JSONObject = [:],
        threadID: String? = nil,
        imageURL: String? = nil,
        category: String? = nil
    ) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.defaultLocale = defaultLocale
        self.sound = sound
        self.badge = badge
        self.userInfo = userInfo
        self.threadID = threadID
        self.imageURL = imageURL
        self.category = category
    }

    /// Whether any of title, subtitle and body is translated.
    public var isTranslated: Bool {
        if case .translations? = title { return true }
        if case .translations? = subtitle { return true }
        if case .translations? = body { return true }
        return false
    }

    /// The locale tags of the translated fields (those of the first
    /// translated field, in sorted order); empty when nothing is translated.
    public var locales: [String] {
        for f in [title, body, subtitle] {
            if let t = f?.translations { return t.keys }
        }
        return []
    }
}

@inline(__always)
func nonEmpty(_ s: String?) -> String? {
    guard let s, !s.isEmpty else { return nil }
    return s
}
