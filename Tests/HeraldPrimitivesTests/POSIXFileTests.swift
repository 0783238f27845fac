import Foundation
@testable import HeraldPrimitives
import Testing

@Suite("POSIX file helpers")
struct POSIXFileTests {
    @Test("deletingLastPathComponent agrees with NSString", arguments: [
        "/a/b/c", "/a/b/c/", "a/b", "/a", "/", "", "a//b", "//a", "./x.sqlite", "/tmp/x/herald.sqlite",
    ])
    func parentPath(_ path: String) {
        #expect(POSIXFile.deletingLastPathComponent(path) == (path as NSString).deletingLastPathComponent)
    }

    /// swift-corelibs-foundation traps on a bare file name; the store then uses ".".
    @Test func bareFileNameHasNoParent() {
        #expect(POSIXFile.deletingLastPathComponent("herald.sqlite") == "")
    }

    @Test("mkdir -p, atomic write, read back, UTF-8 checked")
    func files() throws {
        let root = NSTemporaryDirectory() + "posixfile-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        try POSIXFile.createDirectories(root + "/a/b/c")
        var isDirectory = false
        #expect(POSIXFile.exists(root + "/a/b/c", isDirectory: &isDirectory) && isDirectory)
        try POSIXFile.createDirectories(root + "/a/b/c")  // exists: fine
        try POSIXFile.writeAtomically(root + "/a/f.txt", bytes: Array("héllo\n".utf8))
        #expect(try POSIXFile.readText(root + "/a/f.txt") == "héllo\n")
        #expect(POSIXFile.readPrefix(root + "/a/f.txt", count: 2) == Array("h\u{c3}".utf8.prefix(2)))
        try POSIXFile.writeAtomically(root + "/a/bad.txt", bytes: [0x61, 0xff])
        #expect(throws: POSIXFileError.self) { try POSIXFile.readText(root + "/a/bad.txt") }
        #expect(throws: POSIXFileError.self) { try POSIXFile.readText(root + "/missing") }
        #expect(throws: POSIXFileError.self) { try POSIXFile.createDirectories(root + "/a/f.txt/x") }
    }
}
