import ArgumentParser
import HeraldClient
import HeraldPrimitives

/// `herald status`: the server's Status (needs no token).
struct StatusClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show a server's state, message counts, store and provider pools.",
        discussion: ClientHelp.discussion)

    @OptionGroup var client: ClientOptions

    func run() async throws {
        try await client.run { session in
            session.print(try await session.call(.status, []))
        }
    }
}

/// `herald schedule`: Schedule one message (client.py's `schedule`).
struct ScheduleClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedule", abstract: "Schedule a push for a user (Schedule).", discussion: ClientHelp.discussion)

    @OptionGroup var client: ClientOptions
    @OptionGroup var scope: BundleOptions
    @Option(help: "The user to push to.") var user: String
    @Option(help: "The campaign id.") var campaign = "manual"
    @Option(help: "The idempotency key (generated when empty; then the message cannot be cancelled).") var key = ""
    @OptionGroup var message: ContentOptions
    @Option(help: "Hours the delivery window lasts (1 to 168).") var hours: UInt32?
    @Option(name: .customLong("target-time"), help: ArgumentHelp("The end of the window instead of --hours (RFC 3339).", valueName: "time"))
    var targetTime: String?
    @Option(help: ArgumentHelp("The start of the window: seconds from now, or an RFC 3339 time (default: now).", valueName: "seconds|time"))
    var after: String?
    @Option(help: "traditional, context_aware, or ab (the A/B split picks).") var method: Method = .traditional
    @Option(help: "low, normal or high.") var priority: String?
    @Option(help: "Seconds the push may wait at the provider (0: now or never).") var ttl: UInt32?
    @Option(name: .customLong("collapse-id")) var collapseID: String?
    @Option(name: .customLong("local-send-time"), help: ArgumentHelp("Deliver at this HH:MM in each device's time zone.", valueName: "HH:MM"))
    var localSendTime: String?
    @Flag(help: "Exempt from quiet hours and frequency caps (receipts, codes).") var transactional = false

    enum Method: String, ExpressibleByArgument, CaseIterable {
        case traditional, context_aware, ab
    }

    func validate() throws {
        if hours != nil && targetTime != nil { throw ValidationError("give --hours or --target-time, not both") }
    }

    func fields() throws -> [(String, ProtoValue)] {
        var fields: [(String, ProtoValue)] = [
            ("bundle_id", .string(scope.bundle)), ("platform", .enumName(scope.platform.protoName)),
            ("user_id", .string(user)), ("campaign_id", .string(campaign)), ("idempotency_key", .string(key)),
            ("content", try message.content()),
        ] + (try message.overrides())
        switch method {
        case .traditional: fields.append(("delivery_method", .enumName("DELIVERY_METHOD_TRADITIONAL")))
        case .context_aware: fields.append(("delivery_method", .enumName("DELIVERY_METHOD_CONTEXT_AWARE")))
        case .ab: break
        }
        if let targetTime {
            fields.append(("target_delivery_time", .string(targetTime)))
        } else {
            fields.append(("deliver_within_hours", .uint(UInt64(hours ?? 1))))
        }
        if let after { fields.append(("deliver_after", .string(try ClientInput.time(after, flag: "--after", nowMilliseconds: Timestamp.nowMilliseconds())))) }
        if let priority { fields.append(("priority", .enumName(ProtoMessage.enumName(priority, prefix: "PRIORITY_")))) }
        if let ttl { fields.append(("ttl_seconds", .uint(UInt64(ttl)))) }
        if let collapseID { fields.append(("collapse_id", .string(collapseID))) }
        if let localSendTime { fields.append(("local_send_time", .string(localSendTime))) }
        if transactional { fields.append(("transactional", .bool(true))) }
        return fields
    }

    func run() async throws {
        try await client.run { session in
            session.print(try await session.call(.schedule, try fields()))
        }
    }
}

/// `herald cancel`: Cancel a message by its key.
struct CancelClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel", abstract: "Cancel a scheduled message by its idempotency key (Cancel).",
        discussion: ClientHelp.discussion)

    @OptionGroup var client: ClientOptions
    @OptionGroup var scope: BundleOptions
    @Option(help: "The user it was scheduled for.") var user: String
    @Option(help: "Its campaign id.") var campaign = "manual"
    @Option(help: "Its idempotency key.") var key: String

    func run() async throws {
        try await client.run { session in
            session.print(try await session.call(.cancel, [
                ("bundle_id", .string(scope.bundle)), ("platform", .enumName(scope.platform.protoName)),
                ("user_id", .string(user)), ("campaign_id", .string(campaign)), ("idempotency_key", .string(key)),
            ]))
        }
    }
}

/// `herald render`: what would be sent, without storing or sending.
struct RenderClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render", abstract: "Show exactly what would be sent to APNs or FCM (Render); stores nothing.",
        discussion: ClientHelp.discussion)

    @OptionGroup var client: ClientOptions
    @OptionGroup var scope: BundleOptions
    @OptionGroup var message: ContentOptions
    @Option(help: "The device locale to resolve translations for.") var locale = ""
    @Option(name: .customLong("device-token"), help: "A device token (a placeholder when empty).") var deviceToken = ""
    @Option(help: "low, normal or high.") var priority: String?
    @Option(help: "Seconds the push may wait at the provider.") var ttl: UInt32?
    @Option(name: .customLong("collapse-id")) var collapseID: String?

    func run() async throws {
        var fields: [(String, ProtoValue)] = [
            ("bundle_id", .string(scope.bundle)), ("platform", .enumName(scope.platform.protoName)),
            ("content", try message.content()), ("locale", .string(locale)), ("device_token", .string(deviceToken)),
        ] + (try message.overrides())
        if let priority { fields.append(("priority", .enumName(ProtoMessage.enumName(priority, prefix: "PRIORITY_")))) }
        if let ttl { fields.append(("ttl_seconds", .uint(UInt64(ttl)))) }
        if let collapseID { fields.append(("collapse_id", .string(collapseID))) }
        try await client.run { session in
            session.print(try await session.call(.render, fields))
        }
    }
}

/// `herald get`: a message's state, timeline and per-device outcomes.
struct GetClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Show a message: state, timeline, per-device outcomes (GetMessage).",
        discussion: ClientHelp.discussion)

    @OptionGroup var client: ClientOptions
    @Option(help: "The app's bundle id.") var bundle = "com.example.app"
    @Option(help: "The message id Schedule returned.") var id: String?
    @Option(help: "The idempotency key it was scheduled with.") var key: String?

    func validate() throws {
        if (id == nil) == (key == nil) { throw ValidationError("give exactly one of --id and --key") }
    }

    func run() async throws {
        try await client.run { session in
            session.print(try await session.call(.getMessage, [
                ("bundle_id", .string(bundle)), ("message_id", .string(id ?? "")), ("idempotency_key", .string(key ?? "")),
            ]))
        }
    }
}

/// `herald list`: a user's messages, newest first.
struct ListClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List a user's messages, newest first (ListMessages).", discussion: ClientHelp.discussion)

    @OptionGroup var client: ClientOptions
    @Option(help: "The app's bundle id.") var bundle = "com.example.app"
    @Option(help: "The user.") var user: String
    @Option(help: "Only this campaign.") var campaign = ""
    @Option(help: "Only messages in this state, e.g. sent, no_devices (repeatable).") var state: [String] = []
    @Option(name: .customLong("page-size"), help: "Messages per page (the server's default when 0).") var pageSize: Int32 = 0
    @Option(name: .customLong("page-token"), help: "Continue from a previous page's next_page_token.") var pageToken = ""
    @Flag(help: "Follow next_page_token to the end (at most 1000 pages).") var all = false

    func run() async throws {
        let states = state.map { ProtoValue.enumName(ProtoMessage.enumName($0, prefix: "MESSAGE_STATE_")) }
        try await client.run { session in
            var token = pageToken
            for _ in 0..<(all ? 1000 : 1) {
                let page = try await session.call(.listMessages, [
                    ("bundle_id", .string(bundle)), ("user_id", .string(user)), ("campaign_id", .string(campaign)),
                    ("states", .list(states)), ("page_size", .int(Int64(pageSize))), ("page_token", .string(token)),
                ])
                session.print(page)
                token = page["next_page_token"]?.text ?? ""
                if token.isEmpty { break }
            }
        }
    }
}

/// `herald report`: a campaign's counts per cohort and the A/B comparison.
struct ReportClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report", abstract: "Show a campaign's counts, rates and A/B comparison (CampaignReport).",
        discussion: ClientHelp.discussion)

    @OptionGroup var client: ClientOptions
    @Option(help: "The app's bundle id.") var bundle = "com.example.app"
    @Option(help: "The campaign id.") var campaign: String
    @Option(help: "Only messages created at or after this RFC 3339 time.") var after = ""
    @Option(help: "Only messages created before this RFC 3339 time.") var before = ""

    func run() async throws {
        try await client.run { session in
            session.print(try await session.call(.campaignReport, [
                ("bundle_id", .string(bundle)), ("campaign_id", .string(campaign)),
                ("created_after", .string(after)), ("created_before", .string(before)),
            ]))
        }
    }
}
