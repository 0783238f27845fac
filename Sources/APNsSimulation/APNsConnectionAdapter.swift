import HTTP2Core
import ProviderSimulation
import TLSTransport

/// One APNs request as a connection collects it: every header as text (up
/// to 64 fields and 16 KiB), the payload up to 4 KiB.
struct APNsRequest: SimulatorRequest {
    static let maxBody = 4096
    static let maxHeaderBytes = 16_384

    var headers: [(name: String, value: String)] = []
    var headerBytes = 0
    var body: [UInt8] = []
    var bodyTooLarge = false

    init() {}

    mutating func addHeader(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, trailer: Bool) {
        headerBytes += name.count + value.count
        if headerBytes <= Self.maxHeaderBytes && headers.count < 64 {
            headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
    }

    mutating func addBody(_ bytes: UnsafeRawBufferPointer) {
        if body.count + bytes.count > Self.maxBody {
            bodyTooLarge = true
        } else {
            body.append(contentsOf: bytes)
        }
    }
}

/// APNs' side of one simulator connection: Apple's validation, the
/// connection's provider token, injected faults, records and events.
struct APNsConnectionAdapter: SimulatorAdapter {
    let id: Int
    let state: SimulatorState
    private var tokenState = ConnectionTokenState()
    /// Subject of the client certificate (certificate auth), if one was presented.
    private var clientCertificate: String?

    init(id: Int, state: SimulatorState) {
        self.id = id
        self.state = state
    }

    var sessionSettings: SimulatorSessionSettings {
        SimulatorSessionSettings(maxConcurrentStreams: state.configuration.maxConcurrentStreams)
    }

    mutating func handshakeCompleted(_ event: TLSHandshakeCompleted) {
        clientCertificate = event.peerCertificateSubject
    }

    mutating func sessionStarted() { state.emit(.connectionOpened(connectionID: id)) }
    mutating func pingReceived() { state.emit(.ping(connectionID: id)) }
    mutating func goAwayReceived() { state.emit(.goAwayReceived(connectionID: id)) }
    mutating func connectionClosed() { state.emit(.connectionClosed(connectionID: id)) }

    /// The `goAwayAfterStreams` fault: GOAWAY once this connection began that many streams.
    mutating func streamBegan(streamID: Int32, streamsBegun: Int, openStreams: Int) -> Bool {
        state.observeConcurrentStreams(openStreams)
        guard let limit = state.goAwayAfterStreams() else { return false }
        return streamsBegun >= limit
    }

    /// Validates, injects faults, records, answers.
    mutating func respond(to request: APNsRequest, streamID: Int32) -> SimulatorAction {
        let outcome = RequestValidator.validate(
            headers: request.headers, body: request.body, bodyTooLarge: request.bodyTooLarge,
            certificateAuthenticated: clientCertificate != nil, tokenState: &tokenState, state: state)
        let status: Int
        let apnsID: String
        var body: [UInt8] = []
        switch outcome {
        case .reject(let rejectStatus, let reason, let id):
            status = rejectStatus
            apnsID = id
            body = Array(#"{"reason":"\#(reason)"}"#.utf8)
        case .accept(let deviceToken, let acceptedID):
            let topic = request.headers.first { $0.name == "apns-topic" }?.value
            if state.hangs(token: deviceToken, topic: topic) {  // never answered
                state.emit(.requestHeld(connectionID: id, deviceToken: deviceToken, topic: topic))
                return .hold
            }
            apnsID = acceptedID
            if let (faultStatus, reason, timestamp) = state.injectedFault(token: deviceToken) {
                status = faultStatus
                let stamp = timestamp.map { #","timestamp":\#($0)"# } ?? ""
                body = Array(#"{"reason":"\#(reason)"\#(stamp)}"#.utf8)
            } else {
                status = 200
                state.record(APNsDelivery(
                    connectionID: id, streamID: streamID, apnsID: acceptedID, deviceToken: deviceToken,
                    headers: request.headers, payload: request.body))
            }
        }
        if status != 200 { state.countStatus(status) }
        var headers: [(name: String, value: String)] = [("apns-id", apnsID)]
        if !body.isEmpty { headers.append(("content-type", "application/json")) }
        return .respond(SimulatorResponse(status: status, headers: headers, body: body), after: state.responseDelay())
    }
}
