import CInterop
import Foundation
import Testing
@testable import HeraldStorage

/// SQLite allocates through Herald's per-thread cache of 1–8 KiB blocks
/// (Sources/CInterop/sqlite_memory.c) once a store opened a connection.
@Suite("SQLite allocator")
struct SQLiteAllocatorTests {
    init() throws {
        // Any connection configures SQLite first (before it initializes).
        let path = NSTemporaryDirectory() + "herald-alloc-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try Database(path: path, create: true, busyTimeoutMs: 100)
    }

    @Test("sizes round up (16-byte classes to 1 KiB, 256-byte classes to 8 KiB); realloc keeps the bytes",
          arguments: [1, 8, 1024, 1025, 1268, 3741, 4096, 8192, 8193, 100_000])
    func roundTrip(size: Int32) throws {
        let block = try #require(sqlite3_malloc(size))
        let expected: Int32 = size <= 1024 ? (size + 15) / 16 * 16
            : size <= 8192 ? (size + 255) / 256 * 256 : (size + 7) / 8 * 8
        #expect(sqlite3_msize(block) == UInt64(expected))
        memset(block, 0x5a, Int(size))
        let grown = try #require(sqlite3_realloc(block, size * 3))
        let bytes = grown.assumingMemoryBound(to: UInt8.self)
        #expect((0..<Int(size)).allSatisfy { bytes[$0] == 0x5a })
        #expect(sqlite3_msize(grown) >= UInt64(size * 3))
        sqlite3_free(grown)
    }

    @Test func blocksFreedOnOtherThreadsJoinTheirCaches() async throws {
        // Allocated here, freed on 8 short-lived threads (each caches what it
        // frees and hands its cache back to malloc when it exits), then
        // allocated again here: nothing is lost or freed twice.
        let blocks = (0..<64).map { _ in sqlite3_malloc(3741).map { UInt(bitPattern: $0) } ?? 0 }
        #expect(!blocks.contains(0))
        for chunk in 0..<8 {
            let mine = Array(blocks[(chunk * 8)..<(chunk * 8 + 8)])
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread {
                    for address in mine { sqlite3_free(UnsafeMutableRawPointer(bitPattern: address)) }
                    done.resume()
                }.start()
            }
        }
        for _ in 0..<1000 {
            let block = try #require(sqlite3_malloc(3741))
            memset(block, 1, 3741)
            sqlite3_free(block)
        }
    }
}
