import CInterop
import GRPCEngine
import Testing

@Suite("gzip request decompression")
struct GRPCGzipTests {
    /// gzip-compresses `bytes` with zlib (the test's own compressor).
    static func gzip(_ bytes: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        precondition(cinterop_deflateInit2(&stream, 6, 15 + 16) == Z_OK)
        defer { deflateEnd(&stream) }
        var input = bytes
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(bytes.count))) + 32)
        let produced = input.withUnsafeMutableBufferPointer { inputBuffer in
            output.withUnsafeMutableBufferPointer { outputBuffer in
                stream.next_in = inputBuffer.baseAddress
                stream.avail_in = uInt(inputBuffer.count)
                stream.next_out = outputBuffer.baseAddress
                stream.avail_out = uInt(outputBuffer.count)
                precondition(deflate(&stream, Z_FINISH) == Z_STREAM_END)
                return outputBuffer.count - Int(stream.avail_out)
            }
        }
        return Array(output[0..<produced])
    }

    @Test("round trip", arguments: [0, 1, 100, 16 * 1024, 16 * 1024 + 1, 300_000])
    func roundTrip(size: Int) throws {
        let original = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 / 7) }
        #expect(try GRPCGzip.decompress(Self.gzip(original), limit: 4 << 20) == original)
    }

    @Test func exactlyAtTheLimitIsFineOneMoreIsResourceExhausted() throws {
        let original = [UInt8](repeating: 0x41, count: 64 * 1024)
        #expect(try GRPCGzip.decompress(Self.gzip(original), limit: original.count).count == original.count)
        #expect(throws: GRPCStatus.self) { try GRPCGzip.decompress(Self.gzip(original), limit: original.count - 1) }
        do {
            _ = try GRPCGzip.decompress(Self.gzip(original), limit: original.count - 1)
        } catch {
            #expect(error.code == .resourceExhausted)
        }
    }

    @Test func aBombStopsAtTheLimit() {
        let bomb = Self.gzip([UInt8](repeating: 0, count: 50 << 20))  // 50 MiB of zeros, ~50 KiB compressed
        #expect(bomb.count < 100_000)
        do {
            _ = try GRPCGzip.decompress(bomb, limit: 4 << 20)
            Issue.record("expected RESOURCE_EXHAUSTED")
        } catch {
            #expect(error.code == .resourceExhausted)
        }
    }

    @Test("invalid gzip is INTERNAL", arguments: [
        [], [0x1f, 0x8b], [0x1f, 0x8b, 0x08, 0x00, 0x67, 0x61, 0x72, 0x62], Array("plain text".utf8),
    ] as [[UInt8]])
    func invalid(bytes: [UInt8]) {
        do {
            _ = try GRPCGzip.decompress(bytes, limit: 4 << 20)
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .internalError)
        }
    }

    @Test func trailingBytesAreRefused() {
        do {
            _ = try GRPCGzip.decompress(Self.gzip([1, 2, 3]) + [9, 9], limit: 1024)
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .internalError)
            #expect(error.message.contains("trailing"))
        }
    }

    @Test func truncatedGzipIsInternal() {
        let whole = Self.gzip(Array(repeating: 7, count: 10_000))
        do {
            _ = try GRPCGzip.decompress(Array(whole.dropLast(6)), limit: 1 << 20)
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .internalError)
        }
    }
}
