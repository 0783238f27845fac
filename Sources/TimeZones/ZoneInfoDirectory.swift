import HeraldPrimitives

/// The one I/O entry point: loads a zone's TZif file from a zoneinfo
/// directory (Debian's tzdata: `/usr/share/zoneinfo`). Everything else in
/// this module is pure.
public struct ZoneInfoDirectory: Sendable {
    /// The system's zoneinfo directory.
    public static let defaultPath = "/usr/share/zoneinfo"

    /// The directory the zone files are read from (operator configuration).
    public let path: String

    /// A loader reading from `path`.
    public init(path: String = ZoneInfoDirectory.defaultPath) { self.path = path }

    /// Reads and parses the zone `name`: the name is checked
    /// (``ZoneName``), the file read at most ``TZif/maximumFileSize`` + 1
    /// bytes (a larger file is rejected, never read whole).
    public func load(_ name: String) throws(ZoneLoadError) -> ZoneRules {
        let zone = try ZoneName(name)
        let file = path + "/" + zone.value
        var isDirectory = false
        guard POSIXFile.exists(file, isDirectory: &isDirectory), !isDirectory else {
            throw .unknownZone(zone.value, directory: path)
        }
        guard let bytes = POSIXFile.readPrefix(file, count: TZif.maximumFileSize + 1) else {
            throw .unreadable(zone.value, path: file)
        }
        guard bytes.count <= TZif.maximumFileSize else { throw .fileTooLarge(zone.value, limit: TZif.maximumFileSize) }
        do {
            return try TZif.parse(bytes, name: zone.value)
        } catch {
            throw .invalidData(zone.value, error)
        }
    }
}
