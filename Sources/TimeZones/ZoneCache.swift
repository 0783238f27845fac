import Synchronization

/// Loaded zones by name, so a delivery decision never reads a file: each
/// name is loaded from the ``ZoneInfoDirectory`` once, then served from
/// memory. Thread-safe (one mutex around a dictionary) and bounded: at most
/// ``capacity`` names are kept, unknown and invalid names included (a
/// hostile stream of bogus names costs one failed load each and evicts
/// others, never unbounded memory); when full, an arbitrary entry makes room.
///
/// A changed tzdata file is seen after a restart (zones change a few times
/// a year, with a package upgrade).
public final class ZoneCache: Sendable {
    /// The most names kept (tzdata has under 600 zones and links).
    public let capacity: Int
    private let directory: ZoneInfoDirectory
    /// Name → the zone, or nil when it does not load (remembered too).
    private let entries = Mutex<[String: ZoneRules?]>([:])
    /// How many loads (file reads) happened: for tests and metrics.
    private let loadCount = Atomic<Int>(0)

    /// A cache over `directory`, holding at most `capacity` names (at least 1).
    public init(directory: ZoneInfoDirectory = ZoneInfoDirectory(), capacity: Int = 1024) {
        self.directory = directory
        self.capacity = max(1, capacity)
    }

    /// The zone `name`, loaded at most once while it stays cached; nil when
    /// it is not a loadable zone (invalid name, no such file, bad data).
    public func rules(named name: String) -> ZoneRules? {
        if let cached = entries.withLock({ $0[name] }) { return cached }
        // Loaded outside the lock: a file read never blocks other lookups.
        // Two threads may load one name at once; both get equal rules.
        let loaded = try? directory.load(name)
        loadCount.wrappingAdd(1, ordering: .relaxed)
        entries.withLock { entries in
            if entries[name] == nil, entries.count >= capacity, let victim = entries.keys.first {
                entries.removeValue(forKey: victim)
            }
            entries[name] = .some(loaded)
        }
        return loaded
    }

    /// The zone a device's local times follow (SPEC §4b): its own
    /// `deviceZone` when that loads, else the policy's `policyZone`, else
    /// ``ZoneRules/utc``. Empty names count as absent.
    public func resolve(device deviceZone: String?, policy policyZone: String?) -> ZoneRules {
        if let deviceZone, !deviceZone.isEmpty, let rules = rules(named: deviceZone) { return rules }
        if let policyZone, !policyZone.isEmpty, let rules = rules(named: policyZone) { return rules }
        return .utc
    }

    /// How many names are cached now.
    public var count: Int { entries.withLock { $0.count } }

    /// How many file loads the cache has made (hits make none).
    public var loads: Int { loadCount.load(ordering: .relaxed) }
}
