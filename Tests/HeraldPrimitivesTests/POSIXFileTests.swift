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

@Suite("File modes of secrets and data")
struct FileModeTests {
    private func mode(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
    }

    @Test("secrets files that group or others may access are refused, naming the file", arguments: [
        (0o644, false), (0o640, false), (0o604, false), (0o660, false), (0o600, true), (0o400, true), (0o700, true),
    ])
    func secretModes(_ permissions: Int, _ accepted: Bool) throws {
        let root = NSTemporaryDirectory() + "secret-mode-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        try POSIXFile.createDirectories(root)
        let path = root + "/tokens"
        try POSIXFile.writeAtomically(path, bytes: Array("x\n".utf8))
        try FileManager.default.setAttributes([.posixPermissions: permissions], ofItemAtPath: path)
        do {
            try POSIXFile.requireOwnerOnly(path, what: "tokens file")
            #expect(accepted)
        } catch {
            #expect(!accepted)
            let text = "\(error)"
            #expect(text.contains(path) && text.contains("chmod 600") && text.contains("tokens file"))
        }
    }

    @Test func createdDirectoriesAre0700AndAtomicWrites0600() throws {
        let root = NSTemporaryDirectory() + "modes-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        try POSIXFile.createDirectories(root + "/a/b")
        #expect(mode(root) & 0o077 == 0 && mode(root + "/a/b") & 0o077 == 0)
        try POSIXFile.writeAtomically(root + "/a/f", bytes: [1])
        #expect(mode(root + "/a/f") & 0o077 == 0)
        try POSIXFile.writeAtomically(root + "/a/ca.pem", bytes: [1], mode: 0o644)
        #expect(mode(root + "/a/ca.pem") & 0o600 == 0o600)
    }
}
