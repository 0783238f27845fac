/// A checked IANA time zone name (`Europe/Berlin`, `Etc/GMT+5`, `UTC`):
/// safe to append to a zoneinfo directory.
///
/// Accepted: 1–128 bytes; `/`-separated components of ASCII letters,
/// digits, `_`, `-`, `+` and `.`, each 1–64 bytes, none starting with `.`
/// or `-` (so no `.`, `..`, hidden files or options); no leading or
/// trailing `/`, no `//`. Anything else — an absolute path, NUL, spaces,
/// non-ASCII — is rejected with the reason.
public struct ZoneName: Sendable, Hashable, CustomStringConvertible {
    /// The name as given.
    public let value: String

    /// Checks `text`; throws ``ZoneLoadError/invalidName(_:reason:)``.
    public init(_ text: String) throws(ZoneLoadError) {
        if let reason = Self.problem(text) { throw .invalidName(text, reason: reason) }
        value = text
    }

    public var description: String { value }

    static func problem(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { return "empty" }
        guard bytes.count <= 128 else { return "longer than 128 bytes" }
        guard bytes[0] != UInt8(ascii: "/") else { return "an absolute path, not a zone name" }
        for component in bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            guard let first = component.first else { return "an empty path component" }
            guard component.count <= 64 else { return "a component longer than 64 bytes" }
            guard first != UInt8(ascii: "."), first != UInt8(ascii: "-") else { return "a component starting with '.' or '-'" }
            for c in component {
                let ok = (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A)
                    || c == UInt8(ascii: "_") || c == UInt8(ascii: "-") || c == UInt8(ascii: "+") || c == UInt8(ascii: ".")
                guard ok else { return c == 0 ? "contains NUL" : "contains a byte other than letters, digits, '_', '-', '+', '.'" }
            }
        }
        return nil
    }
}
