#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads corpus files with POSIX calls (the package links no Foundation).
public enum Corpus {
    /// The regular files under `path` (itself when it is a file), sorted;
    /// nothing when it does not exist.
    public static func files(at path: String) -> [String] {
        var info = stat()
        guard stat(path, &info) == 0 else { return [] }
        if info.st_mode & S_IFMT != S_IFDIR { return [path] }
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var found: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            found += files(at: path + "/" + name)
        }
        return found.sorted()
    }

    /// The whole file, or nil when it cannot be read.
    public static func read(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            bytes += buffer[0..<count]
            if count < buffer.count { return ferror(file) == 0 ? bytes : nil }
        }
    }
}
