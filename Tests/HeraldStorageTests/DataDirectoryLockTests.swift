import Foundation
import HeraldTestSupport
import Testing
@testable import HeraldStorage

#if canImport(Glibc)
import Glibc
#endif

@Suite("One writer per data directory", .timeLimit(.minutes(1)))
struct DataDirectoryLockTests {
    @Test("a second lock fails at once, naming the directory and the holder's PID")
    func secondLockFails() async throws {
        try await withTemporaryDirectory { dir in
            let first = try DataDirectoryLock(directory: dir)
            #expect(throws: DataDirectoryLockError.held(directory: dir, pid: getpid())) {
                _ = try DataDirectoryLock(directory: dir)
            }
            let text = String(describing: DataDirectoryLockError.held(directory: dir, pid: getpid()))
            #expect(text.contains(dir) && text.contains("PID \(getpid())") && !text.contains("\n"))
            first.release()
            first.release()  // idempotent
            let second = try DataDirectoryLock(directory: dir)
            second.release()
        }
    }

    @Test("a lock file that is a directory, or a missing directory, is a clear error")
    func unusableLockFile() async throws {
        try await withTemporaryDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir + "/herald.lock", withIntermediateDirectories: false)
            do {
                _ = try DataDirectoryLock(directory: dir)
                Issue.record("a directory named herald.lock cannot be the lock")
            } catch let error as DataDirectoryLockError {
                guard case .cannotLock(let path, _) = error else { Issue.record("\(error)"); return }
                #expect(path == dir + "/herald.lock")
            }
            #expect(throws: DataDirectoryLockError.self) { _ = try DataDirectoryLock(directory: dir + "/missing") }
        }
    }

    @Test("a stale lock file (its holder gone) never blocks; the new holder writes its PID")
    func staleFileDoesNotBlock() async throws {
        try await withTemporaryDirectory { dir in
            _ = FileManager.default.createFile(atPath: dir + "/herald.lock", contents: Data("99999999\ntrailing junk\n".utf8))
            let lock = try DataDirectoryLock(directory: dir)
            let content = String(decoding: FileManager.default.contents(atPath: dir + "/herald.lock") ?? Data(), as: UTF8.self)
            #expect(content == "\(getpid())\n")
            lock.release()
        }
    }
}
