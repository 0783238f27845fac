/// Why a zone could not be loaded by name.
public enum ZoneLoadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not an IANA zone name (see ``ZoneName``).
    case invalidName(String, reason: String)
    /// No regular file of that name in the zoneinfo directory.
    case unknownZone(String, directory: String)
    /// The file is larger than ``TZif/maximumFileSize``.
    case fileTooLarge(String, limit: Int)
    /// The file exists but could not be read.
    case unreadable(String, path: String)
    /// The file is not valid TZif.
    case invalidData(String, TZifError)

    public var description: String {
        switch self {
        case let .invalidName(name, reason): return "invalid time zone name \(Self.quoted(name)): \(reason)"
        case let .unknownZone(name, directory): return "unknown time zone \(Self.quoted(name)) (no such file in \(directory))"
        case let .fileTooLarge(name, limit): return "time zone \(name): file larger than \(limit) bytes"
        case let .unreadable(name, path): return "time zone \(name): cannot read \(path)"
        case let .invalidData(name, error): return "time zone \(name): \(error)"
        }
    }

    /// The name in quotes with control bytes escaped (a hostile name stays one printable line).
    private static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.prefix(128).unicodeScalars {
            out += scalar.value < 0x20 || scalar.value == 0x7F || scalar == "\"" ? scalar.escaped(asASCII: true) : String(scalar)
        }
        return out + "\""
    }
}
