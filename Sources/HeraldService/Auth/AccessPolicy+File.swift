/// Reading grants from a tokens file.
///
/// One grant per line: `<label> <token> <bundle_id>[,<bundle_id>…]` or `*`
/// for every bundle; `#` starts a comment. Keeping tokens in a file (mode
/// 0600) keeps them out of process listings and shell history.
extension AccessPolicy {
    public struct FileError: Error, CustomStringConvertible {
        public var description: String
    }

    public static func parse(_ text: String, source: String) throws -> AccessPolicy {
        var grants: [Grant] = []
        var labels: Set<String> = []
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            if fields.isEmpty { continue }
            guard fields.count == 3 else {
                throw FileError(description: "\(source):\(number + 1): expected \"<label> <token> <bundle ids or *>\", found \(fields.count) fields")
            }
            let label = String(fields[0])
            let token = String(fields[1])
            guard token.utf8.count >= 16 else {
                throw FileError(description: "\(source):\(number + 1): token of \"\(label)\" is shorter than 16 characters")
            }
            guard labels.insert(label).inserted else {
                throw FileError(description: "\(source):\(number + 1): label \"\(label)\" is used twice")
            }
            let bundles = Set(fields[2].split(separator: ",").map(String.init))
            grants.append(Grant(label: label, token: token, bundleIDs: bundles))
        }
        return AccessPolicy(grants: grants)
    }
}

import HeraldPrimitives

#if canImport(Glibc)
import Glibc
#endif

extension AccessPolicy {
    /// Reads and parses a tokens file.
    /// Refuses a file that group or others may access (it holds tokens).
    public static func load(path: String) throws -> AccessPolicy {
        try POSIXFile.requireOwnerOnly(path, what: "tokens file")
        guard let file = fopen(path, "r") else {
            throw FileError(description: "cannot read tokens file \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count <= 0 { break }
            bytes += chunk[0..<count]
            guard bytes.count <= 1 << 20 else { throw FileError(description: "tokens file \(path) is over 1 MiB") }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw FileError(description: "tokens file \(path) is not UTF-8 text")
        }
        let policy = try parse(text, source: path)
        guard !policy.grants.isEmpty else { throw FileError(description: "tokens file \(path) has no tokens") }
        return policy
    }
}
