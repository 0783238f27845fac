import ArgumentParser

/// `--bundle` and `--platform`, for the subcommands that address a bundle's messages.
struct BundleOptions: ParsableArguments {
    @Option(help: "The app's bundle id.")
    var bundle = "com.example.app"

    @Option(help: "ios or android.")
    var platform: PlatformName = .ios

    enum PlatformName: String, ExpressibleByArgument, CaseIterable {
        case ios, android
        var protoName: String { self == .ios ? "PLATFORM_IOS" : "PLATFORM_ANDROID" }
    }
}
