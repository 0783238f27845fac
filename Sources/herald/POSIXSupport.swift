import CInterop
import HeraldPrimitives
import HeraldStorage
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes all of `text` to a file descriptor, unbuffered (1 stdout, 2 stderr).
func writeUnbuffered(_ text: String, to fd: Int32) {
    POSIXFile.writeAll(fd, Array(text.utf8))
}

/// The process environment's value of `name`.
func environmentValue(_ name: String) -> String? {
    getenv(name).map { String(cString: $0) }
}

/// The names of the process's environment variables.
func environmentNames() -> [String] {
    var names: [String] = []
    var entry = environ
    while let pointer = entry.pointee {
        let text = String(cString: pointer)
        names.append(String(text.prefix { $0 != "=" }))
        entry += 1
    }
    return names
}

/// printf-style formatting through `vsnprintf` (what `String(format:)` did).
func cFormat(_ format: String, _ arguments: any CVarArg...) -> String {
    withVaList(arguments) { list in
        var buffer = [CChar](repeating: 0, count: 512)
        let length = buffer.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress!, $0.count, format, list) }
        guard length >= 0 else { return "" }
        return String(decoding: buffer.prefix(min(Int(length), buffer.count - 1)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (Unicode horizontal
    /// whitespace; line breaks stay), as `trimmingCharacters(in: .whitespaces)`.
    func trimmingSpaces() -> String {
        let isSpace = { (c: Character) in c.isWhitespace && !c.isNewline }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}

/// Fixes glibc's mmap threshold at its initial 128 KiB. By default glibc
/// raises the threshold to the size of any mmapped block that is freed, so
/// after the first 4 MiB request body is released every later one comes from
/// the heap, whose freed pages stay resident: 60 connections holding partial
/// bodies then peaked at ~240 MiB of RSS against a 128 MiB buffer budget
/// (161 MiB with the threshold fixed; bench/hostile.sh). Large blocks mapped
/// and unmapped each time cost a syscall pair, which is small beside
/// filling 128 KiB.
func pinMallocMmapThreshold() -> Bool {
    cinterop_pin_mmap_threshold(128 * 1024) == 1
}

/// Sets SIGHUP to be ignored (until the reload service traps it); false
/// when signal(2) fails.
func ignoreSIGHUP() -> Bool {
    unsafeBitCast(signal(SIGHUP, SIG_IGN), to: Int.self) != -1
}
