/// One call's life: receiving → running → responded → closed. A struct whose
/// methods return what the connection must do; no I/O, tested without sockets.
struct GRPCStreamStateMachine: Sendable, Equatable {
    enum State: Sendable, Equatable {
        /// Headers or body still arriving.
        case receiving
        /// A handler is running (async, compute or streaming).
        case running
        /// The response (or a Trailers-Only error) has been submitted.
        case responded
        /// nghttp2 closed the stream.
        case closed
    }

    /// How to end the call with a status.
    enum EndAction: Sendable, Equatable {
        /// Nothing sent yet: one HEADERS frame with the status (Trailers-Only).
        case trailersOnly
        /// Response HEADERS (and messages) went out: queued messages, then trailers.
        case trailers
        /// Already answered or closed: nothing to send.
        case none
    }

    /// What a stream closing means for work in flight.
    enum CloseAction: Sendable, Equatable {
        /// A handler is still running: cancel it (RST_STREAM or connection loss).
        case cancelWork
        /// Nothing runs; release what is held.
        case release
        /// Closed before.
        case none
    }

    private(set) var state: State = .receiving
    /// Response HEADERS were submitted (a streaming call sent a message).
    private(set) var responseStarted = false

    /// Request frames are still wanted.
    var isReceiving: Bool { state == .receiving }
    var isRunning: Bool { state == .running }

    /// The request is complete and a handler starts off the fast path.
    mutating func handlerStarted() {
        if state == .receiving { state = .running }
    }

    /// A streaming handler's first message: the response HEADERS go out. False once the call ended.
    mutating func startResponse() -> Bool {
        guard state == .running else { return false }
        responseStarted = true
        return true
    }

    /// A handler returned (or threw): answer only if the call still waits for it.
    func handlerFinished() -> Bool { state == .running }

    /// The call ends with a status (success of a unary call included).
    mutating func end() -> EndAction {
        switch state {
        case .receiving, .running:
            state = .responded
            return responseStarted ? .trailers : .trailersOnly
        case .responded, .closed:
            return .none
        }
    }

    /// The deadline fired: true when the work must be cancelled and DEADLINE_EXCEEDED sent.
    func deadlineExpired() -> Bool { state == .receiving || state == .running }

    mutating func closed() -> CloseAction {
        defer { state = .closed }
        switch state {
        case .running: return .cancelWork
        case .receiving, .responded: return .release
        case .closed: return .none
        }
    }
}
