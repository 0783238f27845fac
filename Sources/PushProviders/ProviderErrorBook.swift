import HeraldPrimitives
package import Logging
import Synchronization

/// Per provider pool (one APNs or FCM client: credentials + endpoint): the last
/// error, when it happened, and the provider's refusals of the credentials by
/// reason. Status reports it; the first such refusal of a streak is logged at
/// error level with the route's name.
package final class ProviderErrorBook: Sendable {
    package struct Entry: Sendable {
        package var lastError: String?
        package var lastErrorAt: Int64?
        package var authFailures: [String: Int] = [:]
        /// Reasons already logged since the pool last succeeded.
        package var logged: Set<String> = []
    }

    private let entries = Mutex<[ObjectIdentifier: Entry]>([:])

    package init() {}

    package func entry(_ pool: ObjectIdentifier) -> Entry {
        entries.withLock { $0[pool] ?? Entry() }
    }

    /// A request the pool got an answer to (or gave up on): an error
    /// (`error` non-nil) is kept as the last one; an auth refusal is counted
    /// and, first in its streak, logged at error level (`service` names the
    /// provider in the log line).
    package func record(pool: ObjectIdentifier, route: String, error: String?, authReason: String?, service: String, logger: Logger) {
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
