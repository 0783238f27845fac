import CInterop
import GRPCEngine
import HeraldCore
import HeraldProtos
import Testing

@testable import HeraldService

/// The per-call bump arena Render decodes into and packs from
/// (`Sources/CInterop/arena.c`, ``ProtobufCArena``).
@Suite("Render arena", .timeLimit(.minutes(1)))
struct RenderArenaTests {
    typealias W = WireBytes
    let render = RenderService(policy: AccessPolicy(), now: { 1_800_000_000_000 })
    /// `_Alignof(max_align_t)` on the Linux targets (x86_64, aarch64).
    static let alignment = 16

    /// What a reply says, without the random `apns-id`.
    struct Reply: Equatable {
        var path = ""
        var headers: [String] = []
        var payload = ""
        var resolvedLocale = ""
        var warnings: [String] = []
    }

    func reply(_ bytes: [UInt8]) throws -> Reply {
        let packed = try render.render(GRPCRequest(path: RenderService.path, message: bytes))
        return try ProtobufC.withUnpacked(Herald__V1__RenderResponse.self, from: packed) { wire in
            var out = Reply()
            out.resolvedLocale = String(cString: wire.resolved_locale)
            out.warnings = (0..<wire.n_warnings).map { String(cString: wire.warnings[$0]!) }
            guard let apns = wire.apns?.pointee else { return out }
            out.path = String(cString: apns.path)
            out.payload = String(cString: apns.payload_json)
            out.headers = (0..<apns.n_headers).compactMap { index in
                let entry = apns.headers[index]!.pointee
                let name = String(cString: entry.key)
                return name == "apns-id" ? nil : name + ": " + String(cString: entry.value)
            }
            return out
        }
    }

    /// A translated request for locale `locale`, `count` locales per text.
    func translated(locales count: Int, textBytes: Int = 8, locale: String = "l1") -> [UInt8] {
        let pairs = (0..<count).map { (Array("l\($0)".utf8), Array("text \($0) ".utf8) + Array(repeating: UInt8(ascii: "x"), count: textBytes)) }
        let content = W.bytes(1, W.translations(pairs)) + W.bytes(3, W.translations(pairs)) + W.string(4, "l0")
            + W.bytes(7, W.structObject([("order", Array("A-1".utf8)), ("carrier", Array("UPS".utf8))]))
        // A fixed idempotency key: a generated one would differ per call.
        return W.render(content: content, W.string(9, "order-1-shipped") + W.string(10, locale))
    }

    /// The calling thread's arena's overflow count (acquired and released
    /// on this thread, as Render does).
    func threadOverflows() throws -> Int {
        let arena = try #require(cinterop_arena_acquire())
        defer { cinterop_arena_release(arena) }
        #expect(arena.pointee.thread_owned == 1)
        return arena.pointee.overflow_allocations
    }

    @Test func bumpAllocationIsAlignedResetReusesTheBlockAndOverflowIsMalloced() throws {
        let arena = try #require(cinterop_arena_create(256))
        defer { cinterop_arena_destroy(arena) }
        let first = try #require(cinterop_arena_alloc(arena, 3))
        let second = try #require(cinterop_arena_alloc(arena, 5))
        #expect(Int(bitPattern: first) % Self.alignment == 0)
        #expect(second - first == Self.alignment)
        #expect(arena.pointee.used == 2 * Self.alignment)
        // Past the block: malloc'd, counted, and usable in full.
        let big = try #require(cinterop_arena_alloc(arena, 10_000))
        big.initializeMemory(as: UInt8.self, repeating: 0xAB, count: 10_000)
        #expect(arena.pointee.overflow_allocations == 1)
        // Sizes whose rounding or header would overflow are refused.
        #expect(cinterop_arena_alloc(arena, -1) == nil)  // SIZE_MAX
        #expect(cinterop_arena_alloc(arena, Int.max) == nil)
        cinterop_arena_reset(arena)
        #expect(arena.pointee.used == 0)
        #expect(cinterop_arena_alloc(arena, 1) == first)
    }

    @Test func aNestedAcquireOnOneThreadGetsAPrivateArena() throws {
        let outer = try #require(cinterop_arena_acquire())
        let inner = try #require(cinterop_arena_acquire())
        #expect(outer != inner)
        #expect(outer.pointee.thread_owned == 1 && inner.pointee.thread_owned == 0)
        cinterop_arena_release(inner)
        cinterop_arena_release(outer)
        let again = try #require(cinterop_arena_acquire())
        defer { cinterop_arena_release(again) }
        #expect(again == outer)
        #expect(again.pointee.used == 0)
    }

    @Test func reusingTheArenaAcrossCallsGivesIdenticalAnswers() throws {
        let german = translated(locales: 3, locale: "l1")
        let french = translated(locales: 5, textBytes: 40, locale: "l4")
        let expectedGerman = try reply(german)
        let expectedFrench = try reply(french)
        #expect(expectedGerman.payload.contains("text 1 xxxxxxxx") && expectedGerman.resolvedLocale == "l1")
        #expect(expectedFrench.payload.contains("text 4 ") && expectedFrench.resolvedLocale == "l4")
        #expect(expectedGerman.headers.contains("apns-topic: com.example.app"))
        for _ in 0..<200 {
            let (again, other) = (try reply(german), try reply(french))
            #expect(again == expectedGerman)
            #expect(other == expectedFrench)
            // A refused request in between leaves nothing behind.
            #expect(throws: (any Error).self) { try reply(W.render(content: W.plainContent + W.string(4, "l0"), [0xFF])) }
        }
    }

    @Test func aRequestLargerThanTheBlockFallsBackToMallocAndStillRenders() throws {
        let small = translated(locales: 3)
        let expected = try reply(small)
        let overflowsBefore = try threadOverflows()
        // 180 locales × 3 texts of ~130 bytes: about 70 KiB of structs and strings.
        let large = translated(locales: 180, textBytes: 120, locale: "l1")
        #expect(large.count > Int(CINTEROP_ARENA_CAPACITY))
        let big = try reply(large)
        #expect(try threadOverflows() > overflowsBefore)
        #expect(big.resolvedLocale == "l1" && big.payload.contains("text 1 " + String(repeating: "x", count: 120)))
        // The arena is back to normal for the next call.
        let after = try reply(small)
        #expect(after == expected)
    }

    @Test func hostileInputsThroughTheArenaEndInInvalidArgument() throws {
        let valid = translated(locales: 4, textBytes: 20)
        _ = try reply(valid)
        // Every truncation of a valid request: refused or (at a field
        // boundary) answered, never a crash or another code.
        for length in 0..<valid.count {
            do {
                _ = try reply(Array(valid[..<length]))
            } catch {
                #expect(DomainStatus.status(for: error)?.code == .invalidArgument, "truncated at \(length)")
            }
        }
        // Nesting past the limit; a length running past the end; a huge
        // repeated count of empty entries.
        var deep: [UInt8] = W.bytes(3, [0x61])  // Value{string_value}
        for _ in 0..<150 { deep = W.bytes(5, W.bytes(1, W.string(1, "k") + W.bytes(2, deep))) }
        let emptyEntries = Array(repeating: [UInt8]([0x12, 0x00]), count: 100_000).flatMap { $0 }
        for bytes in [
            W.render(content: W.plainContent + W.bytes(7, W.bytes(1, W.string(1, "k") + W.bytes(2, deep)))),
            W.render(content: W.plainContent) + [0x1A, 0xFF, 0xFF, 0xFF, 0x0F, 0x01],
            W.render(content: W.bytes(1, emptyEntries) + W.bytes(3, W.text(Array("There".utf8)))),
        ] {
            do {
                _ = try reply(bytes)
                Issue.record("accepted a hostile request")
            } catch {
                #expect(DomainStatus.status(for: error)?.code == .invalidArgument)
            }
        }
        #expect(try reply(valid).resolvedLocale == "l1")
    }
}

/// `cinterop_random_bytes`: Render's `apns-id` source.
@Suite("Buffered random bytes", .timeLimit(.minutes(1)))
struct BufferedRandomTests {
    @Test func drawsAreDistinctAcrossRefillsAndOversizedRequestsAreRefused() throws {
        var seen = Set<[UInt8]>()
        for _ in 0..<5_000 {  // 16 bytes each: 19 refills of the 4,096-byte buffer
            var draw = [UInt8](repeating: 0, count: 16)
            #expect(draw.withUnsafeMutableBytes { cinterop_random_bytes($0.baseAddress, 16) } == 0)
            seen.insert(draw)
        }
        #expect(seen.count == 5_000)
        #expect(!seen.contains([UInt8](repeating: 0, count: 16)))
        var big = [UInt8](repeating: 0, count: 4_097)
        #expect(big.withUnsafeMutableBytes { cinterop_random_bytes($0.baseAddress, 4_097) } == -1)
    }

    @Test func renderGivesEachReplyItsOwnVersion4APNsID() throws {
        let render = RenderService(policy: AccessPolicy(), now: { 1_800_000_000_000 })
        let ids = try (0..<100).map { _ in
            let packed = try render.render(GRPCRequest(path: RenderService.path, message: WireBytes.render(content: WireBytes.plainContent)))
            return try ProtobufC.withUnpacked(Herald__V1__RenderResponse.self, from: packed) { wire -> String in
                let apns = try #require(wire.apns?.pointee)
                let entry = try #require((0..<apns.n_headers).map { apns.headers[$0]!.pointee }
                    .first { String(cString: $0.key) == "apns-id" })
                return String(cString: entry.value)
            }
        }
        #expect(Set(ids).count == 100)
        for id in ids {
            let bytes = Array(id.utf8)
            #expect(bytes.count == 36 && bytes[14] == UInt8(ascii: "4") && "89ab".utf8.contains(bytes[19]), "\(id)")
        }
    }
}
