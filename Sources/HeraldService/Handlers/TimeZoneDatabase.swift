#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HeraldCore
import Synchronization

/// Which IANA time zone names exist, from the system's tz database
/// (`/usr/share/zoneinfo`): RegisterDevice's `timezone` must be one of them
/// (SPEC §3), not merely shaped like one (`Mars/Olympus`).
///
/// A name is known when it is a well-formed relative path (letters, digits,
/// `/`, `_`, `-`, `+`; no empty component, so no `..` and no absolute
/// path) and the file exists and starts with the `TZif` magic. Each name is
/// read at most once while it stays cached; the cache is bounded, so a
/// client sending endless distinct names costs one small read each, never
/// memory. The check lives here, not in the pure core, because it reads
/// files; handlers receive it injected.
final class TimeZoneDatabase: Sendable {
    /// Longest accepted name, bytes (the longest IANA name is 32).
    static let maximumNameBytes = 64
    /// Names remembered (known or not) before the cache starts over.
    static let cacheLimit = 4096

    static let system = TimeZoneDatabase(root: "/usr/share/zoneinfo")

    private let root: String
    private let cache = Mutex<[String: Bool]>([:])

    init(root: String) {
        self.root = root
    }

    /// Why `name` is not a time zone name this machine knows, or nil when
    /// it is (the empty name means "not given" and passes).
    func problem(_ name: String) -> String? {
        if name.isEmpty { return nil }
        let n = name.utf8.count
        guard n <= Self.maximumNameBytes else {
            return "is \(n) bytes; the limit is \(Self.maximumNameBytes) bytes per time zone name"
        }
        guard Self.isWellFormed(name), isKnown(name) else {
            return ErrorText.quote(name) + " is not an IANA time zone name (e.g. Europe/Zurich)"
        }
        return nil
    }

    /// Letters, digits, `/`, `_`, `-`, `+`; no empty path component.
    static func isWellFormed(_ name: String) -> Bool {
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")
        }
        return allowed && !name.hasPrefix("/") && !name.hasSuffix("/") && !name.contains("//")
    }

    private func isKnown(_ name: String) -> Bool {
        if let known = cache.withLock({ $0[name] }) { return known }
        let known = Self.startsWithTZifMagic(root + "/" + name)
        cache.withLock { cache in
            if cache.count >= Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[name] = known
        }
        return known
    }

    private static func startsWithTZifMagic(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var magic: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
        let count = withUnsafeMutableBytes(of: &magic) { read(fd, $0.baseAddress, 4) }
        return count == 4 && magic == (0x54, 0x5A, 0x69, 0x66)  // "TZif"
    }
}
