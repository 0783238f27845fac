import NIOCore

/// Per-stream state of one call. Confined to its connection's event loop; the
/// `@unchecked Sendable` only lets an async handler's Task carry it back to the loop.
final class GRPCStream: @unchecked Sendable {
    enum Phase {
        /// Headers or body still arriving.
        case receiving
        /// An async handler is running.
        case running
        /// A response (or Trailers-Only error) has been submitted.
        case responded
        /// nghttp2 closed the stream.
        case closed
    }

    let id: Int32
    var phase: Phase = .receiving

    // Request headers.
    var path: String?
    var handler: GRPCUnaryHandler?
    var isPost = false
    var contentType: ContentType = .absent
    var timeout: GRPCTimeout?
    var timeoutInvalid: String?
    var metadata = GRPCMetadata()
    var headerListBytes = 0
    var headerListOverflow = false

    // Request body.
    var deframer: GRPCMessageDeframer
    /// `grpc-encoding: gzip`: compressed messages are inflated.
    var gzip = false
    var message: [UInt8]?
    var extraMessage = false
    var bufferedBytes = 0
    var counted = false

    // Work in flight.
    var deadline: ContinuousClock.Instant?
    var deadlineTimer: Scheduled<Void>?
    var task: Task<Void, Never>?

    // Response body (prefix is produced on the fly).
    var responseBody: [UInt8] = []
    var responseOffset = 0

    enum ContentType { case absent, grpc, other }

    init(id: Int32, maxMessageBytes: Int) {
        self.id = id
        self.deframer = GRPCMessageDeframer(maxMessageBytes: maxMessageBytes)
    }
}
