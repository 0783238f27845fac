import NIOCore

/// One finished call, as a `GRPCCallObserver` sees it.
public struct GRPCFinishedCall: Sendable {
    /// The method's index in `GRPCServer.methods` (registration order), so an
    /// observer can keep per-method state in an array; -1 when the path
    /// matched no registered method.
    public var method: Int
    /// The method path as the client sent it (empty when it sent none).
    public var path: String
    /// The status the call ended with; CANCELLED when the client reset the
    /// stream or the connection was lost before an answer.
    public var code: GRPCStatus.Code
    /// From the first byte of the request's HEADERS to the stream's close.
    public var duration: Duration {
        get { .nanoseconds(durationNanoseconds) }
        set {
            let (seconds, attoseconds) = newValue.components
            durationNanoseconds = seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
        }
    }
    /// `duration` in nanoseconds, as the engine measured it: what a histogram
    /// takes, without a round trip through `Duration` (~250 instructions a call).
    public var durationNanoseconds: Int64
    /// The peer, e.g. `127.0.0.1:53422`.
    public var peer: String?
    /// What the observer's `annotate` said about the request (e.g. a bundle id).
    public var annotation: String?
}

/// Sees every gRPC call the server answered (calls only: a plain HTTP answer
/// to a non-gRPC request is not one). Metrics and the access log hang here.
public protocol GRPCCallObserver: Sendable {
    /// Called once per finished call, on the connection's event loop: must be
    /// cheap and must not block. Only when `observesEachCall`.
    func callFinished(_ call: GRPCFinishedCall)
    /// Whether `callFinished` is called (asked once, at start): false when
    /// `tally` is all the observer needs, so that a call builds no
    /// `GRPCFinishedCall`. True by default.
    var observesEachCall: Bool { get }
    /// Counts and durations the engine tallies itself for every finished
    /// call, per event loop without a lock (read with `snapshot()`); nil (the
    /// default) tallies nothing.
    var tally: GRPCCallTally? { get }
    /// Whether `annotate` is called; false costs nothing per call.
    var annotatesRequests: Bool { get }
    /// Called with each complete request message of a unary or
    /// server-streaming call, on the event loop before the handler runs; what
    /// it returns comes back in `GRPCFinishedCall.annotation`.
    func annotate(_ request: GRPCRequest) -> String?
}

extension GRPCCallObserver {
    public var observesEachCall: Bool { true }
    public var tally: GRPCCallTally? { nil }
    public var annotatesRequests: Bool { false }
    public func annotate(_ request: GRPCRequest) -> String? { nil }
}

extension GRPCConnection {
    /// Reports a call that was counted as an RPC once its stream is gone:
    /// to the loop's tally table, then (if it observes each call) the observer.
    @inline(__always)
    func reportFinished(_ stream: GRPCStream, now: NIODeadline) {
        let elapsed = (now - stream.receiveStartedAt).nanoseconds
        let method = stream.route?.index ?? -1
        let code = stream.finalStatus < 0 ? GRPCStatus.Code.cancelled.rawValue : stream.finalStatus
        callTable?.record(method: method, code: code, nanoseconds: elapsed)
        guard let callFinished = shared.callFinished else { return }
        callFinished(GRPCFinishedCall(
            method: method, path: stream.path ?? "", code: GRPCStatus.Code(rawValue: code),
            durationNanoseconds: elapsed, peer: remoteAddress, annotation: stream.annotation))
    }

    /// Asks the observer about a complete request. Only called when it
    /// wants to (`shared.annotate != nil`): out of line, because passing the
    /// request to the stored closure copies it into a temporary.
    @inline(never)
    func annotate(_ stream: GRPCStream, _ request: GRPCRequest) {
        guard let annotate = shared.annotate else { return }
        stream.annotation = annotate(request)
    }
}
