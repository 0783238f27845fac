import ArgumentParser
import HeraldClient

/// `herald register`: RegisterDevice (to try a push end to end).
struct RegisterClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register", abstract: "Register a user's device (RegisterDevice).", discussion: ClientHelp.discussion)

    @OptionGroup var client: ClientOptions
    @OptionGroup var scope: BundleOptions
    @Option(help: "The user.") var user: String
    @Option(name: .customLong("device-token"), help: "The APNs device token (hex) or FCM registration token.") var deviceToken: String
    @Option(help: "The device's locale, e.g. de-CH.") var locale = "en"
    @Option(help: "The device's IANA time zone.") var timezone = "UTC"
    @Flag(help: "iOS: an APNs sandbox (development) token.") var sandbox = false

    func run() async throws {
        try await client.run { session in
            session.print(try await session.call(.registerDevice, [
                ("bundle_id", .string(scope.bundle)), ("platform", .enumName(scope.platform.protoName)),
                ("user_id", .string(user)), ("device_token", .string(deviceToken)), ("locale", .string(locale)),
                ("timezone", .string(timezone)),
                ("environment", .enumName(sandbox ? "APNS_ENVIRONMENT_SANDBOX" : "APNS_ENVIRONMENT_PRODUCTION")),
            ]))
        }
    }
}

/// `herald unregister`: UnregisterDevice.
struct UnregisterClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unregister", abstract: "Remove a device's registration (UnregisterDevice).",
        discussion: ClientHelp.discussion)

    @OptionGroup var client: ClientOptions
    @Option(help: "The app's bundle id.") var bundle = "com.example.app"
    @Option(name: .customLong("device-token"), help: "The device token.") var deviceToken: String

    func run() async throws {
        try await client.run { session in
            session.print(try await session.call(.unregisterDevice, [
                ("bundle_id", .string(bundle)), ("device_token", .string(deviceToken)),
            ]))
        }
    }
}
