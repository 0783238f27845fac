import HeraldPrimitives
import ProviderSimulation
import Synchronization

/// An access token the token endpoint minted.
struct AccessGrant {
    var projectID: String
    var expires: Timestamp
}

/// Shared, locked state of one simulator: accounts, access tokens, the token
/// registry, faults, quota buckets, records, open connections.
final class FCMSimulatorState: Sendable {
    let configuration: FCMSimulatorConfiguration
    let verifiers: [AccountVerifier]
    let recordFile: SimulatorRecordFile?
    /// Accepted messages (kept when `keepAccepted`), the count and answers by status.
    let records: SimulatorRecords<FCMAcceptedMessage>
    /// The connections accepted.
    let channels = SimulatorChannels()

    /// Most access tokens kept; expired ones are pruned first.
    static let maxGrants = 100_000

    private let boundPort = Atomic<Int>(0)
    private let grants = Mutex<[String: AccessGrant]>([:])
    private let registry = Mutex<[String: FCMTokenState]>([:])
    private let faults = Mutex(FaultQueue())
    private let buckets = Mutex<[String: QuotaBucket]>([:])
    private let tokensMintedCount = Atomic<Int>(0)
    private let messageSerial = Atomic<Int>(0)

    init(configuration: FCMSimulatorConfiguration, verifiers: [AccountVerifier], recordFile: SimulatorRecordFile?) {
        self.configuration = configuration
        self.verifiers = verifiers
        self.recordFile = recordFile
        self.records = SimulatorRecords(keep: configuration.keepAccepted)
    }

    var now: Timestamp { configuration.now() }

    // MARK: Port and connections

    var port: Int {
        get { boundPort.load(ordering: .acquiring) }
        set { boundPort.store(newValue, ordering: .releasing) }
    }

    /// The unique tail of an accepted message's name (16 hex digits, as FCM's look), no random bytes needed.
    func nextMessageSuffix() -> String {
        let serial = UInt64(bitPattern: Int64(messageSerial.add(1, ordering: .relaxed).newValue)) &* 0x9E37_79B9_7F4A_7C15
        let hex = String(serial, radix: 16)
        return String(repeating: "0", count: 16 - hex.utf8.count) + hex
    }

    // MARK: Access tokens

    /// Mints an access token for `projectID`, valid for `accessTokenLifetime`.
    func mintAccessToken(projectID: String) -> String {
        var random = SystemRandomNumberGenerator()
        let bytes = (0..<24).map { _ in UInt8.random(in: 0...255, using: &random) }
        let token = "ya29.sim-" + Base64.encode(bytes, url: true)
        let now = self.now
        let expires = now.addingTimeInterval(configuration.accessTokenLifetime.timeInterval)
        grants.withLock { grants in
            if grants.count >= Self.maxGrants {
                grants = grants.filter { $0.value.expires > now }
                if grants.count >= Self.maxGrants, let oldest = grants.min(by: { $0.value.expires < $1.value.expires }) {
                    grants.removeValue(forKey: oldest.key)
                }
            }
            grants[token] = AccessGrant(projectID: projectID, expires: expires)
        }
        tokensMintedCount.add(1, ordering: .relaxed)
        return token
    }

    /// The grant for `token` if it exists and has not expired by the simulator's clock.
    func grant(for token: String) -> AccessGrant? {
        let now = self.now
        return grants.withLock { grants in
            guard let grant = grants[token] else { return nil }
            return grant.expires > now ? grant : nil
        }
    }

    func tokensMinted() -> Int { tokensMintedCount.load(ordering: .relaxed) }

    // MARK: Registry, faults, quota

    func setToken(_ token: String, project: String, state: FCMTokenState) {
        registry.withLock { $0[project + "\u{0}" + token] = state }
    }

    func tokenState(_ token: String, project: String) -> FCMTokenState {
        registry.withLock { $0[project + "\u{0}" + token] } ?? .valid
    }

    func inject(_ fault: FCMFault, count: Int) { faults.withLock { $0.inject(fault, count: count) } }
    func nextSendFault() -> FCMFault? { faults.withLock { $0.nextSendFault() } }
    func nextGrantFails() -> Bool { faults.withLock { $0.nextGrantFails() } }
    func pendingFaults() -> Int { faults.withLock { $0.pending } }
    func clearFaults() { faults.withLock { $0.clear() } }

    /// Takes one send from `project`'s bucket: nil when allowed (or no quota
    /// is configured), else the Retry-After seconds.
    func takeQuota(project: String) -> Int? {
        guard let perMinute = configuration.quotaPerMinute else { return nil }
        let now = self.now
        return buckets.withLock { buckets in
            var bucket = buckets[project] ?? QuotaBucket(perMinute: perMinute, now: now)
            let wait = bucket.take(now: now)
            buckets[project] = bucket
            return wait
        }
    }

    /// Retry-After for an injected quota fault without its own: the bucket's
    /// refill time when a quota is configured.
    func quotaRetryAfter(project: String) -> Int? {
        guard let perMinute = configuration.quotaPerMinute else { return nil }
        let now = self.now
        return buckets.withLock { buckets in
            var bucket = buckets[project] ?? QuotaBucket(perMinute: perMinute, now: now)
            let wait = bucket.retryAfter(now: now)
            buckets[project] = bucket
            return wait
        }
    }

    // MARK: Records

    func countStatus(_ status: Int) { records.countStatus(status) }

    /// Records an accepted message (file line first, so it is on disk before the 200).
    func record(_ accepted: FCMAcceptedMessage, message: JSONValue) {
        recordFile?.append(RecordFile.line(for: accepted, message: message))
        records.record(accepted)
    }
}
