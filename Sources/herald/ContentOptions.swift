import ArgumentParser
import HeraldClient

/// The message content flags `schedule` and `render` share: plain or
/// translated texts, the other Content fields, and the ios/android overrides.
struct ContentOptions: ParsableArguments {
    @Option(help: "The title (or --title-in).") var title: String?
    @Option(help: "The body (or --body-in).") var body: String?
    @Option(help: "The subtitle.") var subtitle: String?
    @Option(name: .customLong("title-in"), help: ArgumentHelp("A translated title, LOCALE=TEXT (repeatable).", valueName: "locale=text"))
    var titleIn: [String] = []
    @Option(name: .customLong("body-in"), help: ArgumentHelp("A translated body, LOCALE=TEXT (repeatable).", valueName: "locale=text"))
    var bodyIn: [String] = []
    @Option(name: .customLong("subtitle-in"), help: ArgumentHelp("A translated subtitle, LOCALE=TEXT (repeatable).", valueName: "locale=text"))
    var subtitleIn: [String] = []
    @Option(name: .customLong("default-locale"), help: "The locale used when a device's has no translation (required with translations).")
    var defaultLocale: String?
    @Option var sound: String?
    @Option var badge: Int32?
    @Option(name: .customLong("thread-id")) var threadID: String?
    @Option(name: .customLong("image-url")) var imageURL: String?
    @Option var category: String?
    @Option(name: .customLong("user-info"), help: ArgumentHelp("Custom data for the app, a JSON object.", valueName: "json"))
    var userInfo: String?
    @Option(help: ArgumentHelp("Overrides merged into the APNs payload, a JSON object.", valueName: "json")) var ios: String?
    @Option(help: ArgumentHelp("Overrides merged into the FCM message, a JSON object.", valueName: "json")) var android: String?

    func validate() throws {
        if (title == nil) == titleIn.isEmpty { throw ValidationError("give --title or --title-in (not both)") }
        if (body == nil) == bodyIn.isEmpty { throw ValidationError("give --body or --body-in (not both)") }
        if subtitle != nil && !subtitleIn.isEmpty { throw ValidationError("give --subtitle or --subtitle-in, not both") }
    }

    /// The Content message.
    func content() throws(ClientFailure) -> ProtoValue {
        var content: [(String, ProtoValue)] = []
        if let title = try ClientInput.localizedText(plain: title, translations: titleIn, flag: "--title-in") { content.append(("title", title)) }
        if let subtitle = try ClientInput.localizedText(plain: subtitle, translations: subtitleIn, flag: "--subtitle-in") { content.append(("subtitle", subtitle)) }
        if let body = try ClientInput.localizedText(plain: body, translations: bodyIn, flag: "--body-in") { content.append(("body", body)) }
        if let defaultLocale { content.append(("default_locale", .string(defaultLocale))) }
        if let sound { content.append(("sound", .string(sound))) }
        if let badge { content.append(("badge", .int(Int64(badge)))) }
        if let threadID { content.append(("thread_id", .string(threadID))) }
        if let imageURL { content.append(("image_url", .string(imageURL))) }
        if let category { content.append(("category", .string(category))) }
        if let userInfo { content.append(("user_info", try ClientInput.jsonObject(userInfo, flag: "--user-info"))) }
        return .message(content)
    }

    /// `ios` and `android` overrides, when given.
    func overrides() throws(ClientFailure) -> [(String, ProtoValue)] {
        var fields: [(String, ProtoValue)] = []
        if let ios { fields.append(("ios", try ClientInput.jsonObject(ios, flag: "--ios"))) }
        if let android { fields.append(("android", try ClientInput.jsonObject(android, flag: "--android"))) }
        return fields
    }
}
