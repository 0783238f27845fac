#if canImport(Glibc)
import Glibc
#endif

/// The file system holding a directory, as an unprivileged writer sees it
/// (`statvfs`): what `/metrics` reports as `herald_data_dir_*_bytes`.
struct DiskSpace: Sendable, Equatable {
    /// Bytes a non-root process may still write (`f_bavail × f_frsize`).
    var availableBytes: Int
    /// The file system's size (`f_blocks × f_frsize`).
    var sizeBytes: Int

    /// The file system of `directory`; nil when `statvfs` fails.
    static func of(_ directory: String) -> DiskSpace? {
        var stats = statvfs()
        guard statvfs(directory, &stats) == 0 else { return nil }
        let unit = Int(clamping: stats.f_frsize)
        let (available, overflowA) = Int(clamping: stats.f_bavail).multipliedReportingOverflow(by: unit)
        let (size, overflowS) = Int(clamping: stats.f_blocks).multipliedReportingOverflow(by: unit)
        return DiskSpace(availableBytes: overflowA ? .max : available, sizeBytes: overflowS ? .max : size)
    }
}
