import GRPCEngine
import NIOCore
import NIOHTTP1

/// The HTTP/1.1 handlers of a connection on the gRPC port that did not open
/// with the HTTP/2 preface (`GRPCServerConfiguration.http1Pipeline`).
enum WebPipeline {
    /// Appends them to `channel`'s pipeline (on its loop).
    static func configure(_ channel: any Channel, api: ContextPushAPI, connect: ConnectAPI? = nil, limits: WebLimits) throws {
        let sync = channel.pipeline.syncOperations
        let watch = WebReadWatch(limit: limits.maxHeaderBytes + WebLimits.readSlack)
        var decoderLimits = NIOHTTPDecoderLimitConfiguration()
        decoderLimits.maxHeaderListSize = limits.maxHeaderBytes
        decoderLimits.maxHeaderFieldSize = limits.maxHeaderBytes
        decoderLimits.maxHeaderFieldCount = 256
        try sync.addHandler(watch)
        try sync.addHandler(HTTPResponseEncoder())
        try sync.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes, limitConfiguration: decoderLimits)))
        // One request at a time: a pipelined one waits (and reading stops) until the answer before it is written.
        try sync.addHandler(HTTPServerPipelineHandler())
        // A request the parser refuses (smuggling, bad bytes, headers too long): 400 and closed.
        try sync.addHandler(HTTPServerProtocolErrorHandler())
        try sync.addHandler(WebHTTPHandler(api: api, connect: connect, limits: limits, watch: watch))
    }
}
