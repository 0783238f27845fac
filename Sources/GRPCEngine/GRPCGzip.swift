import CInterop

/// `grpc-encoding: gzip` for request messages: inflation bounded by the
/// message limit, so a small compressed message cannot expand into memory
/// it was never allowed to take (a decompression bomb is RESOURCE_EXHAUSTED).
public enum GRPCGzip {
    /// The encodings the server accepts, as advertised in `grpc-accept-encoding`.
    public static let acceptEncoding = "identity,gzip"

    /// Inflates a gzip member.
    ///
    /// - Throws: RESOURCE_EXHAUSTED when the result would exceed `limit`
    ///   bytes; INTERNAL when the data is not valid gzip.
    public static func decompress(_ compressed: [UInt8], limit: Int) throws(GRPCStatus) -> [UInt8] {
        var stream = z_stream()
        // 15 + 16: a gzip header and trailer (CRC and length checked).
        guard cinterop_inflateInit2(&stream, 15 + 16) == Z_OK else {
            throw GRPCStatus(.internalError, "gzip: cannot initialize inflate")
        }
        defer { inflateEnd(&stream) }
        var output = [UInt8]()
        output.reserveCapacity(min(limit, max(compressed.count * 4, 256)))
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        var input = compressed
        let status: Int32 = input.withUnsafeMutableBufferPointer { inputBuffer in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = uInt(inputBuffer.count)
            var rc: Int32 = Z_OK
            repeat {
                rc = chunk.withUnsafeMutableBufferPointer { chunkBuffer in
                    stream.next_out = chunkBuffer.baseAddress
                    stream.avail_out = uInt(chunkBuffer.count)
                    return inflate(&stream, Z_NO_FLUSH)
                }
                let produced = chunk.count - Int(stream.avail_out)
                if output.count + produced > limit { return Z_MEM_ERROR }
                output.append(contentsOf: chunk[0..<produced])
            } while rc == Z_OK && (stream.avail_in > 0 || stream.avail_out == 0)
            return rc
        }
        switch status {
        case Z_STREAM_END:
            guard stream.avail_in == 0 else {
                throw GRPCStatus(.internalError, "gzip: trailing bytes after the compressed message")
            }
            return output
        case Z_MEM_ERROR:
            throw GRPCStatus(.resourceExhausted, "decompressed message exceeds the \(limit)-byte limit")
        default:
            throw GRPCStatus(.internalError, "gzip: invalid compressed message")
        }
    }
}
