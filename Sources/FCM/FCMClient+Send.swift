import HeraldPrimitives
import Logging

extension FCMClient {
    /// May a request that has made `attempts` attempts make another?
    private func mayRetry(_ request: FCMRequest, attempts: Int) -> Bool {
        if request.singleAttempt { return false }
        return request.deadline != nil || attempts < configuration.maxAttempts
    }

    /// Whether a pause of `pause` from now ends before the request's deadline.
    private func fits(_ pause: Duration, _ request: FCMRequest) -> Bool {
        guard let deadline = request.deadline else { return true }
        return configuration.clock.now().addingTimeInterval(pause.timeInterval) < deadline
    }

    func sendWithRetries(_ request: FCMRequest) async throws -> FCMResponse {
        let clock = configuration.clock
        let path = "/v1/projects/\(request.projectID)/messages:send"
        var attempts = 0
        var failures = 0
        var refusals = 0
        var tokenRefreshed = false
        while true {
            if isShutdown.load(ordering: .relaxed) { throw FCMError.shutdown }
            if let deadline = request.deadline, clock.now() >= deadline { throw FCMError.deadlineExceeded }
            try await limiter.acquire(project: request.projectID, clock: clock, deadline: request.deadline)
            let fetched: FCMAccessTokens.Token?
            do {
                fetched = try await tokens.credential(waitingUntil: request.deadline)
            } catch {
                if isShutdown.load(ordering: .relaxed) { throw FCMError.shutdown }
                failures += 1
                if error.retryable, mayRetry(request, attempts: failures) {
                    let pause = policy.retryBackoff.delay(afterFailures: failures)
                    guard fits(pause, request) else { throw FCMError.tokenEndpoint(error.description) }
                    try await clock.sleep(for: pause)
                    continue
                }
                throw FCMError.tokenEndpoint(error.description)
            }
            guard let token = fetched else { throw FCMError.deadlineExceeded }  // no token before the deadline
            attempts += 1
            let http = FCMHTTPRequest(
                path: path,
                headers: [("authorization", token.authorization), ("content-type", "application/json; charset=utf-8")],
                body: request.body, deadline: request.deadline, willHandOver: request.willHandOver)
            let answer: FCMHTTPAnswer
            do {
                answer = try await pool.send(http)
            } catch {
                switch error {
                case .streamRefused:
                    // Never processed (above GOAWAY's last-stream-id): resend, it is no duplicate.
                    attempts -= 1
                    refusals += 1
                    if refusals > 100 { throw FCMError.connectionFailed("streams refused 100 times") }
                    continue
                case .connectionClosed, .streamReset, .responseTimeout:
                    failures += 1
                    let pause = policy.retryBackoff.delay(afterFailures: failures)
                    guard mayRetry(request, attempts: attempts), fits(pause, request) else {
                        throw request.deadline != nil && !request.singleAttempt && !fits(pause, request)
                            ? FCMError.deadlineExceeded : FCMError.connectionFailed(error.description)
                    }
                    try await clock.sleep(for: pause)
                    continue
                case .connectFailed(_, let retryable):
                    // The slot paces reconnects (backoff); just queue again.
                    attempts -= 1
                    failures += 1
                    if retryable, mayRetry(request, attempts: failures) { continue }
                    throw FCMError.connectionFailed(error.description)
                case .deadlineExceeded:
                    throw FCMError.deadlineExceeded
                case .shutdown:
                    throw FCMError.shutdown
                case .cancelled:
                    throw CancellationError()
                case .handOverNotRecorded(let why):
                    throw FCMError.handOverNotRecorded(why)
                case .credentials(let why):
                    throw FCMError.connectionFailed(why)  // FCM streams carry no pool credential
                }
            }
            let retryAfter = answer.keptHeader.flatMap { FCMRetryAfter.parse($0, now: clock.now()) }
            var response = FCMErrorBody.response(
                status: answer.status, body: answer.body, truncated: answer.bodyTruncated, retryAfter: retryAfter)
            response.attempts = attempts
            let sameKindFailures = failures + 1
            switch policy.decide(response, failures: sameKindFailures, tokenRefreshed: tokenRefreshed) {
            case .finish:
                return finished(response, request)
            case .refreshToken:
                tokenRefreshed = true
                await tokens.invalidate(token.value)
                logger.info("FCM refused the access token (401); fetching a new one", metadata: ["project": "\(request.projectID)"])
                continue
            case .retry(let pause):
                failures += 1
                guard mayRetry(request, attempts: attempts), fits(pause, request) else { return finished(response, request) }
                logger.debug("FCM answered \(response.status); retrying", metadata: [
                    "project": "\(request.projectID)", "pause": "\(pause)", "attempts": "\(attempts)",
                ])
                try await clock.sleep(for: pause)
            }
        }
    }

    /// The answer returned: a 401 still refused after the refresh is UNAUTHENTICATED.
    private func finished(_ response: FCMResponse, _ request: FCMRequest) -> FCMResponse {
        var response = response
        if response.status == 401 && response.errorCode != .thirdPartyAuthError {
            response.errorCode = .unauthenticated
        }
        if response.errorCode == .thirdPartyAuthError || response.errorCode == .unauthenticated {
            logger.error("FCM refused the credentials", metadata: [
                "project": "\(request.projectID)", "error": "\(response.errorCode?.rawValue ?? "")",
                "message": "\(response.errorMessage ?? "")",
            ])
        }
        return response
    }
}
