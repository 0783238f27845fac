import ArgumentParser
import HeraldClient
import Synchronization

/// `herald events`: tail a bundle's delivery events (StreamEvents), one line
/// each, starting after `--cursor`, from the oldest kept (`--from-start`),
/// or from now on.
struct EventsClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events", abstract: "Tail a bundle's delivery events (StreamEvents), one line each.",
        discussion: """
            Each line: CURSOR AT KIND message=… key=… user=… campaign=… [device=…] [reason=…] [http=…]. \
            Resume with --cursor set to the last line's first word: every later event comes exactly once, in order. \
            Without --follow it stops once no event has arrived for --idle seconds; with --follow it waits for \
            new events until interrupted (or --count).

            """ + ClientHelp.discussion)

    @OptionGroup var client: ClientOptions
    @Option(help: "The app's bundle id.") var bundle = "com.example.app"
    @Option(help: "Resume after this cursor (the first word of a line printed before).") var cursor = ""
    @Flag(name: .customLong("from-start"), help: "Start from the oldest event kept.") var fromStart = false
    @Flag(help: "Keep waiting for new events (until interrupted or --count).") var follow = false
    @Option(help: ArgumentHelp("Without --follow: stop once no event came for this many seconds.", valueName: "seconds"))
    var idle: Double = 1
    @Option(help: "Only this campaign.") var campaign = ""
    @Option(help: "Only this kind, e.g. sent, device_removed (repeatable).") var kind: [String] = []
    @Option(help: "Stop after this many events (0: no limit).") var count = 0

    func validate() throws {
        if !cursor.isEmpty && fromStart { throw ValidationError("give --cursor or --from-start, not both") }
        guard idle > 0, idle <= 3600 else { throw ValidationError("--idle must be more than 0 and at most 3600 seconds") }
        guard count >= 0 else { throw ValidationError("--count must be 0 or more") }
    }

    /// One event as a line (the table form).
    static func line(_ event: ProtoNode) -> String {
        var line = "\(event["cursor"]?.text ?? "") \(event["at"]?.text ?? "") \(event["kind"]?.text ?? "")"
        line += " message=\(event["message_id"]?.text ?? "") key=\(event["idempotency_key"]?.text ?? "")"
        line += " user=\(event["user_id"]?.text ?? "") campaign=\(event["campaign_id"]?.text ?? "")"
        if let device = event["device_token"]?.text, !device.isEmpty { line += " device=\(device)" }
        if let reason = event["reason"]?.text, !reason.isEmpty { line += " reason=\(reason)" }
        if let http = event["http_status"]?.text, !http.isEmpty, http != "0" { line += " http=\(http)" }
        return line
    }

    func run() async throws {
        let kinds = kind.map { ProtoValue.enumName(ProtoMessage.enumName($0, prefix: "EVENT_KIND_")) }
        let fields: [(String, ProtoValue)] = [
            ("bundle_id", .string(bundle)), ("cursor", .string(cursor)), ("from_start", .bool(fromStart)),
            ("campaign_id", .string(campaign)), ("kinds", .list(kinds)),
        ]
        let (follow, count, idle) = (self.follow, self.count, Duration.milliseconds(Int64(self.idle * 1000)))
        try await client.run { session in
            let request = try ProtoMessage.pack(HeraldRPC.streamEvents.request, fields)
            let stream = session.client.call(HeraldRPC.streamEvents.path, message: request, metadata: session.metadata, timeout: nil)
            let seen = EventCount()
            let json = session.json
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await bytes in stream {
                        let event = try ProtoMessage.read(HeraldRPC.streamEvents.reply, bytes)
                        writeUnbuffered((json ? ProtoJSON.line(event) : Self.line(event)) + "\n", to: 1)
                        let total = seen.value.add(1, ordering: .relaxed).newValue
                        if count > 0 && total >= count { return }
                    }
                }
                if !follow {
                    group.addTask {
                        var before = 0
                        while true {
                            try await Task.sleep(for: idle)
                            let now = seen.value.load(ordering: .relaxed)
                            if now == before { return }
                            before = now
                        }
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        }
    }
}

/// Events printed so far (read by the idle watch).
final class EventCount: Sendable {
    let value = Atomic<Int>(0)
}
