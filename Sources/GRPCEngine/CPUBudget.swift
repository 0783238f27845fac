import CInterop
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// The CPUs this process may use, and so how many event loops and compute
/// threads it runs by default (issue 30): the fewest of the CPUs online, the
/// CPU affinity (`taskset`, a cpuset) and the cgroup's CPU quota (a
/// container's `--cpus`, systemd's `CPUQuota=`), a fractional quota rounded
/// up. NIO's `System.coreCount` reads the quota and the cgroup's cpuset
/// file but not the affinity, so a server pinned with `taskset` ran a loop
/// per core of the machine.
public struct CPUBudget: Sendable, Hashable {
    /// CPUs online (`sysconf(_SC_NPROCESSORS_ONLN)`).
    public var online: Int
    /// CPUs the affinity mask allows; nil when it could not be read.
    public var affinity: Int?
    /// The tightest cgroup CPU quota on the way to the root, in CPUs (1.5:
    /// one and a half); nil when none is set or none could be read.
    public var quota: Double?

    public init(online: Int, affinity: Int?, quota: Double?) {
        self.online = online
        self.affinity = affinity
        self.quota = quota
    }

    /// CPUs the process may use: at least 1.
    public var usable: Int {
        var count = max(1, online)
        if let affinity, affinity > 0 { count = min(count, affinity) }
        if let quota, quota > 0 { count = min(count, Int(quota.rounded(.up))) }
        return max(1, count)
    }

    /// For the start-up log: "2 CPUs usable (2 online, affinity 2, no cgroup CPU quota)".
    public var summary: String {
        let quotaText = quota.map { "cgroup CPU quota \(Self.format($0))" } ?? "no cgroup CPU quota"
        let affinityText = affinity.map { "affinity \($0)" } ?? "affinity unknown"
        return "\(usable) CPU\(usable == 1 ? "" : "s") usable (\(online) online, \(affinityText), \(quotaText))"
    }

    /// This process's budget, read now.
    public static func current() -> CPUBudget {
        let online = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let affinity = Int(cinterop_affinity_cpu_count())
        return CPUBudget(
            online: online > 0 ? online : 1, affinity: affinity > 0 ? affinity : nil,
            quota: cgroupQuota(readFile: readSmallFile))
    }

    /// Read once per process: the defaults of ``GRPCServerConfiguration``.
    public static let atStart = current()

    /// Sizes NIO's shared singletons (the provider clients' and simulators'
    /// event loops, NIO's blocking pool) to `usable` CPUs instead of
    /// `System.coreCount` (which ignores the affinity), unless the operator
    /// set NIO's own variables. Call once, first thing in `main`, before
    /// anything uses a singleton (NIO stops the process otherwise).
    public static func sizeNIOSingletons(to usable: Int = atStart.usable, environment: (String) -> String?) {
        if environment("NIO_SINGLETON_GROUP_LOOP_COUNT") == nil {
            NIOSingletons.groupLoopCountSuggestion = max(1, usable)
        }
        if environment("NIO_SINGLETON_BLOCKING_POOL_THREAD_COUNT") == nil {
            NIOSingletons.blockingPoolThreadCountSuggestion = max(1, usable)
        }
    }

    // MARK: cgroups (pure: the files' text in, the quota out)

    /// The tightest quota on the process's cgroup path: v2's `cpu.max` at
    /// each level from the process's cgroup up to the root (a parent's limit
    /// binds its children), else v1's `cpu.cfs_quota_us` / `cpu.cfs_period_us`.
    static func cgroupQuota(readFile: (String) -> String?) -> Double? {
        guard let membership = readFile("/proc/self/cgroup") else { return nil }
        if let path = v2Path(procSelfCgroup: membership) {
            var tightest: Double?
            for directory in ancestors(of: path) {
                if let text = readFile("/sys/fs/cgroup\(directory)/cpu.max"), let quota = quota(cpuMax: text) {
                    tightest = min(tightest ?? quota, quota)
                }
            }
            if tightest != nil { return tightest }
        }
        if let path = v1CPUPath(procSelfCgroup: membership) {
            for mount in ["/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"] {
                var tightest: Double?
                for directory in ancestors(of: path) {
                    if let quotaText = readFile("\(mount)\(directory)/cpu.cfs_quota_us"),
                       let periodText = readFile("\(mount)\(directory)/cpu.cfs_period_us"),
                       let quota = quota(cfsQuota: quotaText, period: periodText) {
                        tightest = min(tightest ?? quota, quota)
                    }
                }
                if tightest != nil { return tightest }
            }
        }
        return nil
    }

    /// The unified hierarchy's path: the line `0::/path`.
    static func v2Path(procSelfCgroup text: String) -> String? {
        for line in text.split(separator: "\n") where line.hasPrefix("0::") {
            let path = String(line.dropFirst(3))
            return path.hasPrefix("/") ? path : nil
        }
        return nil
    }

    /// The v1 `cpu` controller's path: the line `N:…cpu…:/path`.
    static func v1CPUPath(procSelfCgroup text: String) -> String? {
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, fields[1].split(separator: ",").contains("cpu") else { continue }
            let path = String(fields[2])
            return path.hasPrefix("/") ? path : nil
        }
        return nil
    }

    /// `/a/b` → `/a/b`, `/a`, `` (the mount's root); `/` → ``.
    static func ancestors(of path: String) -> [String] {
        var parts = path.split(separator: "/").map(String.init)
        var result: [String] = []
        while !parts.isEmpty {
            result.append("/" + parts.joined(separator: "/"))
            parts.removeLast()
        }
        result.append("")
        return result
    }

    /// v2 `cpu.max`: "QUOTA PERIOD" in µs, or "max PERIOD" (none).
    static func quota(cpuMax text: String) -> Double? {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count == 2, let quota = Double(fields[0]), let period = Double(fields[1]),
              quota > 0, period > 0, quota.isFinite, period.isFinite else { return nil }
        return quota / period
    }

    /// v1: `cpu.cfs_quota_us` (-1: none) over `cpu.cfs_period_us`.
    static func quota(cfsQuota: String, period: String) -> Double? {
        let trim: (String) -> Substring = { $0.split(separator: "\n").first ?? "" }
        guard let quota = Double(trim(cfsQuota)), let period = Double(trim(period)),
              quota > 0, period > 0, quota.isFinite, period.isFinite else { return nil }
        return quota / period
    }

    private static func format(_ cpus: Double) -> String {
        let hundredths = Int((cpus * 100).rounded())
        return hundredths % 100 == 0 ? "\(hundredths / 100)" : "\(hundredths / 100).\(String(format2: hundredths % 100))"
    }

    /// The first 4 KiB of a small file (cgroup and proc files), or nil.
    private static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var filled = 0
        while filled < buffer.count {
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { break }
            filled += got
        }
        return String(decoding: buffer[..<filled], as: UTF8.self)
    }
}

private extension String {
    /// Two digits, zero-padded.
    init(format2 value: Int) {
        self = value < 10 ? "0\(value)" : "\(value)"
    }
}
