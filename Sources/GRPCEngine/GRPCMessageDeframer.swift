/// Why a request body could not be split into gRPC messages.
public enum GRPCFramingError: Error, Sendable, Hashable {
    /// The 5-byte prefix declared more than the limit (detected before buffering the body).
    case messageTooLarge(declared: Int, limit: Int)
    /// The compressed flag is set but no supported `grpc-encoding` was negotiated.
    case compressionNotSupported
    /// The flag byte is neither 0 nor 1.
    case invalidFlags(UInt8)
    /// The stream ended inside a message (`buffered` bytes of prefix + body seen).
    case truncated(buffered: Int)

    /// The gRPC status the server answers with.
    public var status: GRPCStatus {
        switch self {
        case let .messageTooLarge(declared, limit):
            GRPCStatus(.resourceExhausted, "request message of \(declared) bytes exceeds the limit of \(limit) bytes")
        case .compressionNotSupported:
            GRPCStatus(.unimplemented, "compressed message without a supported grpc-encoding (grpc-accept-encoding: identity,gzip)")
        case let .invalidFlags(flags):
            GRPCStatus(.internalError, "invalid gRPC message flags 0x\(String(flags, radix: 16))")
        case let .truncated(buffered):
            GRPCStatus(.internalError, "request ended inside a gRPC message (\(buffered) bytes received)")
        }
    }
}

/// Splits a byte stream into gRPC length-prefixed messages (1 flag byte, 4-byte
/// big-endian length, body). Input may split a message anywhere or hold several.
/// Bounded: never buffers more than `maxMessageBytes` plus the 5-byte prefix.
public struct GRPCMessageDeframer: Sendable {
    public let maxMessageBytes: Int
    public let acceptsCompressed: Bool

    private var prefix: (UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0)
    private var prefixCount = 0
    private var body: [UInt8] = []
    private var bodyLength = 0
    private var compressed = false

    public init(maxMessageBytes: Int, acceptsCompressed: Bool = false) {
        self.maxMessageBytes = maxMessageBytes
        self.acceptsCompressed = acceptsCompressed
    }

    /// Bytes held for an incomplete message.
    public var bufferedBytes: Int { prefixCount + body.count }

    /// True between messages (nothing partial buffered).
    public var isAtMessageBoundary: Bool { prefixCount == 0 }

    /// Feeds bytes; calls `onMessage(compressed, body)` for each complete message.
    public mutating func append(
        _ input: UnsafeRawBufferPointer,
        _ onMessage: (Bool, [UInt8]) throws -> Void
    ) throws {
        var offset = 0
        let count = input.count
        while offset < count {
            if prefixCount < 5 {
                // Fast path: a whole prefix available in this chunk.
                if prefixCount == 0, count - offset >= 5 {
                    prefix = (input[offset], input[offset + 1], input[offset + 2], input[offset + 3], input[offset + 4])
                    prefixCount = 5
                    offset += 5
                } else {
                    setPrefixByte(prefixCount, input[offset])
                    prefixCount += 1
                    offset += 1
                }
                if prefixCount == 5 {
                    try beginMessage()
                    if bodyLength == 0 {
                        try finishMessage(onMessage)
                        continue
                    }
                    // Whole body in this chunk: no intermediate buffer.
                    if count - offset >= bodyLength {
                        let message = Array(UnsafeRawBufferPointer(rebasing: input[offset..<(offset + bodyLength)]))
                        offset += bodyLength
                        let flag = compressed
                        reset()
                        try onMessage(flag, message)
                        continue
                    }
                }
                continue
            }
            let take = min(bodyLength - body.count, count - offset)
            // Exactly the declared size (checked against the limit): growth by
            // doubling would hold up to twice what the budgets count.
            if body.isEmpty { body.reserveCapacity(bodyLength) }
            body.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[offset..<(offset + take)]))
            offset += take
            if body.count == bodyLength {
                try finishMessage(onMessage)
            }
        }
    }

    /// Convenience for tests and tools: returns the complete messages' bodies.
    public mutating func append(_ bytes: [UInt8]) throws -> [[UInt8]] {
        var messages: [[UInt8]] = []
        try bytes.withUnsafeBytes { raw in
            try append(raw) { _, body in messages.append(body) }
        }
        return messages
    }

    /// Drops a partial message (its storage is freed); the deframer starts over.
    public mutating func discard() {
        reset()
    }

    /// Call at END_STREAM: throws `.truncated` if a message is incomplete.
    public func finish() throws {
        if prefixCount != 0 { throw GRPCFramingError.truncated(buffered: bufferedBytes) }
    }

    private mutating func setPrefixByte(_ index: Int, _ byte: UInt8) {
        switch index {
        case 0: prefix.0 = byte
        case 1: prefix.1 = byte
        case 2: prefix.2 = byte
        case 3: prefix.3 = byte
        default: prefix.4 = byte
        }
    }

    private mutating func beginMessage() throws {
        switch prefix.0 {
        case 0: compressed = false
        case 1:
            guard acceptsCompressed else { throw GRPCFramingError.compressionNotSupported }
            compressed = true
        default: throw GRPCFramingError.invalidFlags(prefix.0)
        }
        let length = Int(prefix.1) << 24 | Int(prefix.2) << 16 | Int(prefix.3) << 8 | Int(prefix.4)
        guard length <= maxMessageBytes else {
            throw GRPCFramingError.messageTooLarge(declared: length, limit: maxMessageBytes)
        }
        bodyLength = length
    }

    private mutating func finishMessage(_ onMessage: (Bool, [UInt8]) throws -> Void) throws {
        let message = body
        let flag = compressed
        reset()
        try onMessage(flag, message)
    }

    private mutating func reset() {
        prefixCount = 0
        body = []
        bodyLength = 0
        compressed = false
    }
}

/// Builds gRPC length-prefixed frames.
public enum GRPCMessageFramer {
    /// The 5-byte prefix followed by `message` (uncompressed).
    public static func frame(_ message: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(message.count + 5)
        out.append(0)
        let length = UInt32(message.count)
        out.append(UInt8(truncatingIfNeeded: length >> 24))
        out.append(UInt8(truncatingIfNeeded: length >> 16))
        out.append(UInt8(truncatingIfNeeded: length >> 8))
        out.append(UInt8(truncatingIfNeeded: length))
        out.append(contentsOf: message)
        return out
    }
}
