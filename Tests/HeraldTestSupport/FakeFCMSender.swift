public import FCM
public import FCMProvider
import Synchronization

/// An FCM client in memory for the dispatcher's tests: records the hand-over
/// first (``FCMRequest/willHandOver``), as the real client does just before
/// writing, then records every request and answers as told (200 with a message name by default), or
/// throws the error set for a token.
public final class FakeFCMSender: FCMSending {
    /// One request the fake accepted for sending.
    public struct Sent: Sendable {
        public var projectID: String
        public var deviceToken: String
        public var body: [UInt8]
        public var singleAttempt: Bool
        public var bodyText: String { String(decoding: body, as: UTF8.self) }
    }

    private struct State {
        var sent: [Sent] = []
        var answers: [String: FCMResponse] = [:]
        var errors: [String: FCMError] = [:]
    }

    private let state = Mutex(State())
    private let stream: AsyncStream<Sent>
    private let continuation: AsyncStream<Sent>.Continuation
    /// Called with each request before it is answered (e.g. to look at the store meanwhile).
    private let onSend: (@Sendable (FCMRequest) async -> Void)?

    public init(onSend: (@Sendable (FCMRequest) async -> Void)? = nil) {
        (stream, continuation) = AsyncStream.makeStream()
        self.onSend = onSend
    }

    /// Every request sent so far, in order.
    public var sent: [Sent] { state.withLock { $0.sent } }

    /// Answers `response` to every later request for `deviceToken`.
    public func answer(_ deviceToken: String, with response: FCMResponse) {
        state.withLock { $0.answers[deviceToken] = response }
    }

    /// Throws `error` for every later request for `deviceToken`.
    public func fail(_ deviceToken: String, with error: FCMError) {
        state.withLock { $0.errors[deviceToken] = error }
    }

    /// Waits for the next `count` requests (in order).
    public func next(_ count: Int) async -> [Sent] {
        var out: [Sent] = []
        for await request in stream {
            out.append(request)
            if out.count == count { break }
        }
        return out
    }

    public func send(_ request: FCMRequest) async throws -> FCMResponse {
        if let hook = request.willHandOver {
            let failure: (any Error)? = await withCheckedContinuation { continuation in
                hook { continuation.resume(returning: $0) }
            }
            if let failure { throw FCMError.handOverNotRecorded("\(failure)") }
        }
        let sent = Sent(projectID: request.projectID, deviceToken: request.deviceToken, body: request.body,
                        singleAttempt: request.singleAttempt)
        let (answer, error) = state.withLock { state in
            state.sent.append(sent)
            return (state.answers[request.deviceToken], state.errors[request.deviceToken])
        }
        continuation.yield(sent)
        await onSend?(request)
        if let error { throw error }
        return answer ?? FCMResponse.accepted(name: "projects/\(request.projectID)/messages/\(state.withLock { $0.sent.count })")
    }
}

extension FCMResponse {
    /// A 200 naming the message.
    public static func accepted(name: String) -> FCMResponse {
        var response = FCMResponse.refused(status: 200, code: nil)
        response.messageName = name
        return response
    }

    /// A refusal with FCM's error code and message.
    public static func refused(status: Int, code: FCMErrorCode?, message: String? = nil, attempts: Int = 1) -> FCMResponse {
        FCMResponse(status: status, messageName: nil, errorCode: code, errorMessage: message, retryAfter: nil, attempts: attempts)
    }
}
