import GRPCEngine
import HeraldCore
import HeraldPrimitives
import HeraldStorage

/// The operator console (SPEC §8): server-rendered pages on the admin
/// listener. Every figure comes from what the RPCs read — Status's view and
/// snapshot, the read side's store queries (under their own bound), the
/// event log, the delivery counters — never a second implementation.
struct ConsoleService: Sendable {
    /// An answer: the HTTP status, headers beyond the defaults, the page.
    struct Response: Sendable {
        var status: Int
        var headers: [(String, String)]
        var body: String
    }

    /// The console's own bound on store reads (apart from the RPCs').
    static let maxConcurrentReads = 2
    static let maxQueuedReads = 16
    /// Most rows of one table (devices, timeline): a page stays under
    /// 100 KB whatever a message holds (long values are clipped too).
    static let maxRows = 100
    /// How many events the Events page shows.
    static let eventCount = 50
    /// How far back in the log the Events page looks for them.
    static let eventLookBack: Int64 = 500

    let status: StatusService
    let counters: ConsoleCounters
    let history: ConsoleHistoryCell
    let store: any MessageReadSide
    let events: (any DeliveryEventLog)?
    /// Bounds the console's store reads (a reload storm queues or is refused).
    let reads: ReadAdmission
    var now: @Sendable () -> Int64 = { Timestamp.nowMilliseconds() }

    /// Headers every console page carries.
    static let pageHeaders: [(String, String)] = [
        ("Content-Type", "text/html; charset=utf-8"),
        ("Content-Security-Policy", ConsoleLayout.contentSecurityPolicy),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store"),
    ]

    /// One sample into the history (the admin listener's 10 s timer).
    func sample() {
        history.record(counters.sample(dueLagMilliseconds: status.snapshot().oldestDueLagMilliseconds), at: now())
    }

    /// Answers a GET for `request` from a caller with `authorization`.
    func respond(_ request: ConsoleRequest, authorization: String?) async -> Response {
        do throws(ConsoleRefusal) {
            let caller = try ConsoleCaller.identify(status.policy, authorization: authorization)
            // The overview answers without a token; `?signin=1` asks the
            // browser for one (the 401 challenge makes it prompt).
            if request.page == .overview, request.value("signin") != nil, case .anonymous = caller {
                throw ConsoleRefusal(.unauthorized, "sign in with a Herald token as the password (any user name)")
            }
            let body: String = switch request.page {
            case .overview: overview(caller)
            case .campaigns: try await campaigns(request, caller)
            case .message: try await message(request, caller)
            case .messages: try await messages(request, caller)
            case .events: try await eventsPage(request, caller)
            }
            return Response(status: 200, headers: Self.pageHeaders, body: body)
        } catch {
            return Self.refused(error)
        }
    }

    static func refused(_ refusal: ConsoleRefusal) -> Response {
        var headers = pageHeaders
        if refusal.status == .unauthorized { headers.append(("WWW-Authenticate", ConsoleCaller.challenge)) }
        if refusal.status == .methodNotAllowed { headers.append(("Allow", "GET, HEAD")) }
        return Response(status: refusal.status.rawValue, headers: headers, body: ConsoleLayout.refusal(refusal))
    }

    /// Runs a store read under the console's bound; a store error is a 503
    /// page (its text is for the log, not the page: it may name the store).
    func read<T: Sendable>(_ body: () async throws -> T) async throws(ConsoleRefusal) -> T {
        do {
            return try await reads.run(body)
        } catch {
            if let status = error as? GRPCStatus, status.code == .resourceExhausted {
                throw ConsoleRefusal(.tooManyRequests, "too many console reads at once; try again in a moment")
            }
            throw ConsoleRefusal(.unavailable, "the store could not be read; see the server's log")
        }
    }

    /// A required, bounded text parameter.
    static func parameter(_ request: ConsoleRequest, _ name: String, limit: Int) throws(ConsoleRefusal) -> String? {
        guard let value = request.value(name) else { return nil }
        guard value.utf8.count <= limit else {
            throw ConsoleRefusal(.badRequest, "\(name) is \(value.utf8.count) bytes; the limit is \(limit)")
        }
        return value
    }
}
