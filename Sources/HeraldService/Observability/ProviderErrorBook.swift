import HeraldPrimitives
import APNs
import Logging
import Synchronization

/// Per provider pool (one APNs or FCM client: credentials + endpoint): the last
/// error, when it happened, and the provider's refusals of the credentials by
/// reason. Status reports it; the first such refusal of a streak is logged at
/// error level with the route's name.
final class ProviderErrorBook: Sendable {
    struct Entry: Sendable {
        var lastError: String?
        var lastErrorAt: Int64?
        var authFailures: [String: Int] = [:]
        /// Reasons already logged since the pool last succeeded.
        var logged: Set<String> = []
    }

    /// The reasons that mean the credentials (not the device or the payload)
    /// are wrong: every request on the pool fails until an operator acts.
    static let authReasons: Set<APNsReason> = [
        .invalidProviderToken, .expiredProviderToken, .missingProviderToken, .badCertificate,
        .badCertificateEnvironment, .forbidden, .unrelatedKeyIdInToken, .badEnvironmentKeyInToken,
    ]

    private let entries = Mutex<[ObjectIdentifier: Entry]>([:])

    func entry(_ pool: ObjectIdentifier) -> Entry {
        entries.withLock { $0[pool] ?? Entry() }
    }

    /// A request the pool got an answer to (or gave up on): an error
    /// (`error` non-nil) is kept as the last one; an auth refusal is counted
    /// and, first in its streak, logged at error level.
    func record(pool: ObjectIdentifier, route: String, error: String?, authReason: APNsReason?, logger: Logger) {
        record(pool: pool, route: route, error: error, authReason: authReason?.rawValue, service: "APNs", logger: logger)
    }

    /// The same for any provider (`service` names it in the log line).
    func record(pool: ObjectIdentifier, route: String, error: String?, authReason: String?, service: String, logger: Logger) {
        let now = Timestamp.nowMilliseconds()
        let firstOfStreak = entries.withLock { entries -> Bool in
            var entry = entries[pool] ?? Entry()
            defer { entries[pool] = entry }
            guard let error else {
                entry.logged.removeAll()
                return false
            }
            entry.lastError = error
            entry.lastErrorAt = now
            guard let authReason else { return false }
            entry.authFailures[authReason, default: 0] += 1
            return entry.logged.insert(authReason).inserted
        }
        if firstOfStreak, let authReason {
            logger.error("\(service) refused the route's credentials: every push on it fails until they are fixed", metadata: [
                "route": "\(route)", "reason": "\(authReason)",
            ])
        }
    }
}

/// One pool as Status reports it.
struct APNsPoolReport: Sendable {
    var status: APNsPoolStatus
    var route: String
    var errors: ProviderErrorBook.Entry
    /// Every bundle the routes sharing this pool serve (`*`: all): Status
    /// shows a bundle-scoped token only the pools that serve its bundles.
    var bundleIDs: Set<String> = ["*"]
}
