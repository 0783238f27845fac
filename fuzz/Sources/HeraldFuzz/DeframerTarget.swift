import GRPCEngine

/// Input: one control byte, then the request body as the stream carries it.
///
/// Control bit 0 set: no `grpc-encoding` negotiated (compressed messages are
/// refused); bits 4–7: the largest DATA chunk is 2^n bytes. The stream is cut
/// into chunks whose sizes come from the input itself (an xorshift seeded by
/// the control byte and the stream length), as DATA frames of any size may
/// arrive, and every compressed message is inflated as the server does.
///
/// Properties: the chunked run yields exactly the messages and the error of
/// a single-chunk run; the deframer never holds more than the limit plus the
/// 5-byte prefix; inflation never returns more than the limit.
enum DeframerTarget {
    /// The server's default `maxReceiveMessageBytes` (4 MiB).
    static let limit = GRPCServerConfiguration().maxReceiveMessageBytes

    struct Outcome: Equatable {
        var messages: [[UInt8]] = []
        var compressed: [Bool] = []
        var error: GRPCFramingError?
    }

    static func run(_ input: [UInt8]) {
        guard let control = input.first else { return }
        let stream = Array(input.dropFirst())
        let acceptsCompressed = control & 1 == 0
        let maxChunk = 1 << Int(control >> 4)
        let whole = deframe(stream, acceptsCompressed: acceptsCompressed) { _ in stream.count }
        var state = UInt64(control) << 32 | UInt64(stream.count) | 1
        let chunked = deframe(stream, acceptsCompressed: acceptsCompressed) { _ in
            // xorshift64: cheap and deterministic for one input.
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return 1 + Int(state % UInt64(maxChunk))
        }
        precondition(whole == chunked, "chunking changed the deframer's result")
        for (index, body) in whole.messages.enumerated() where whole.compressed[index] {
            if let inflated = try? GRPCGzip.decompress(body, limit: limit) {
                precondition(inflated.count <= limit, "inflated past the limit")
            }
        }
    }

    private static func deframe(
        _ stream: [UInt8], acceptsCompressed: Bool, nextChunk: (Int) -> Int
    ) -> Outcome {
        var deframer = GRPCMessageDeframer(maxMessageBytes: limit, acceptsCompressed: acceptsCompressed)
        var outcome = Outcome()
        var offset = 0
        do {
            try stream.withUnsafeBytes { raw in
                while offset < raw.count {
                    let end = min(raw.count, offset + max(1, nextChunk(offset)))
                    try deframer.append(UnsafeRawBufferPointer(rebasing: raw[offset..<end])) { compressed, body in
                        outcome.messages.append(body)
                        outcome.compressed.append(compressed)
                    }
                    precondition(deframer.bufferedBytes <= limit + 5, "deframer buffered past the limit")
                    offset = end
                }
            }
            try deframer.finish()
        } catch let error as GRPCFramingError {
            outcome.error = error
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
        return outcome
    }
}
