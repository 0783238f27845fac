import CInterop
import GRPCEngine

/// A per-call bump arena (`cinterop_arena`, Sources/CInterop/arena.c) for the
/// protobuf-c structs of one request and its reply: one block per thread,
/// reused call after call, so decoding and packing allocate nothing from
/// malloc unless a message outgrows the block (then the overflow is malloc'd
/// and freed when the call ends).
///
/// Only valid inside ``ProtobufC/withArena(_:)``: every pointer it hands out
/// dies when that returns.
struct ProtobufCArena {
    let raw: UnsafeMutablePointer<cinterop_arena>

    /// The protobuf-c allocator view of the arena.
    var allocator: UnsafeMutablePointer<ProtobufCAllocator> {
        UnsafeMutableRawPointer(raw).assumingMemoryBound(to: ProtobufCAllocator.self)
    }

    /// `count` bytes aligned for any type (malloc failure is fatal, as for
    /// every other allocation in Swift).
    func allocate(_ count: Int) -> UnsafeMutableRawPointer {
        guard let pointer = cinterop_arena_alloc(raw, count) else { fatalError("out of memory: arena allocation of \(count) bytes") }
        return pointer
    }

    /// A NUL-terminated copy of `bytes`.
    func string<C: Collection<UInt8>>(bytes: C) -> UnsafeMutablePointer<CChar> {
        let out = allocate(bytes.count + 1).bindMemory(to: UInt8.self, capacity: bytes.count + 1)
        let buffer = UnsafeMutableBufferPointer(start: out, count: bytes.count)
        _ = buffer.initialize(fromContentsOf: bytes)
        out[bytes.count] = 0
        return UnsafeMutableRawPointer(out).assumingMemoryBound(to: CChar.self)
    }

    /// A NUL-terminated copy of `string` (straight from its UTF-8 storage).
    func string(_ string: String) -> UnsafeMutablePointer<CChar> {
        var string = string
        return string.withUTF8 { self.string(bytes: $0) }
    }

    /// An initialized message in the arena, customized by `build`.
    func message<M: GeneratedMessage>(_ type: M.Type = M.self, _ build: (inout M) -> Void) -> UnsafeMutablePointer<M> {
        let pointer = allocate(MemoryLayout<M>.stride).bindMemory(to: M.self, capacity: 1)
        var value = M.initialized()
        build(&value)
        pointer.initialize(to: value)
        return pointer
    }

    /// A C array of `count` message pointers, as protoc-c represents
    /// `repeated` messages; nil when empty.
    func pointerArray<T>(count: Int, _ element: (Int) -> UnsafeMutablePointer<T>) -> UnsafeMutablePointer<UnsafeMutablePointer<T>?>? {
        guard count > 0 else { return nil }
        let array = allocate(MemoryLayout<UnsafeMutablePointer<T>?>.stride * count)
            .bindMemory(to: UnsafeMutablePointer<T>?.self, capacity: count)
        for index in 0..<count { (array + index).initialize(to: element(index)) }
        return array
    }
}

extension ProtobufC {
    /// Runs `body` with the calling thread's arena (a private one when the
    /// thread's is busy), released when `body` returns or throws. Nothing
    /// allocated from it may outlive `body`.
    ///
    /// - Throws: RESOURCE_EXHAUSTED when no arena can be allocated, and what
    ///   `body` throws.
    static func withArena<R>(_ body: (ProtobufCArena) throws -> R) throws -> R {
        guard let raw = cinterop_arena_acquire() else {
            throw GRPCStatus(.resourceExhausted, "out of memory for the request's arena")
        }
        defer { cinterop_arena_release(raw) }
        return try body(ProtobufCArena(raw: raw))
    }

    /// ``withUnpacked(_:from:_:)`` with protobuf-c allocating from `arena`:
    /// nothing is freed one by one; the arena's release frees it all.
    static func withUnpacked<M: GeneratedMessage, R>(
        _ type: M.Type, from bytes: [UInt8], arena: ProtobufCArena, _ body: (borrowing M) throws -> R
    ) throws -> R {
        let parsed = try parse(M.self, bytes, allocator: arena.allocator)
        return try body(UnsafeMutableRawPointer(parsed).assumingMemoryBound(to: M.self).pointee)
    }
}
