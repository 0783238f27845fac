import HTTP2Core
import ProviderSimulation

extension CollectedRequest: SimulatorRequest {
    /// Keeps `:method`, `:path` and `authorization`; past the header bounds
    /// the request is only marked too large. Trailers are ignored.
    mutating func addHeader(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, trailer: Bool) {
        guard !trailer else { return }
        headerBytes += name.count + value.count
        headerCount += 1
        if headerBytes > FCMSimulatorLimits.maxHeaderBytes || headerCount > FCMSimulatorLimits.maxHeaderCount {
            headersTooLarge = true
            return
        }
        if bytesEqual(name, ":method") {
            method = String(decoding: value, as: UTF8.self)
        } else if bytesEqual(name, ":path") {
            path = String(decoding: value, as: UTF8.self)
        } else if bytesEqual(name, "authorization") {
            authorization = String(decoding: value, as: UTF8.self)
        }
    }

    /// Up to the token endpoint's or `messages:send`'s body bound; past it
    /// the body is dropped and marked too large.
    mutating func addBody(_ bytes: UnsafeRawBufferPointer) {
        let limit = path.hasPrefix(FCMSimulator.tokenPath) ? FCMSimulatorLimits.maxTokenBody : FCMSimulatorLimits.maxSendBody
        if bodyTooLarge || body.count + bytes.count > limit {
            bodyTooLarge = true
            body = []
        } else {
            body.append(contentsOf: bytes)
        }
    }
}

/// FCM's side of one simulator connection: the routes (token endpoint,
/// `messages:send`) through ``RequestRouter``, and FCM's connection bounds
/// (idle and request timeouts, nghttp2 flood limits).
struct FCMConnectionAdapter: SimulatorAdapter {
    let state: FCMSimulatorState

    var sessionSettings: SimulatorSessionSettings {
        var options = HTTP2SessionOptions()
        options.streamResetRateLimit = (burst: 1000, rate: 33)
        options.maxOutboundAck = 1000
        options.maxSettings = 32
        options.maxContinuations = 8
        return SimulatorSessionSettings(
            maxConcurrentStreams: state.configuration.maxConcurrentStreams,
            maxHeaderListSize: FCMSimulatorLimits.maxHeaderBytes, options: options)
    }

    var idleTimeout: Duration? { state.configuration.idleTimeout }
    var requestTimeout: Duration? { state.configuration.requestTimeout }
    var resetsStreamsPastGoAway: Bool { false }

    mutating func respond(to request: CollectedRequest, streamID: Int32) -> SimulatorAction {
        switch RequestRouter.route(request, state: state) {
        case .drop: return .drop
        case .refuseWithGoaway: return .refuseWithGoAway
        case .reply(let reply, let delay):
            state.countStatus(reply.status)
            return .respond(SimulatorResponse(status: reply.status, headers: reply.headers, body: reply.body), after: delay)
        }
    }
}
