/// What to do after an HTTP answer: a pure decision, bounded by the caller
/// (single attempt, attempt count, deadline).
enum FCMRetryDecision: Equatable, Sendable {
    /// A final answer: return it.
    case finish
    /// Try again after this pause.
    case retry(after: Duration)
    /// 401 without an FCM error detail: drop the access token, fetch a new one, go again at once.
    case refreshToken
}

struct FCMRetryPolicy: Sendable {
    var retryBackoff: FCMBackoff
    var quotaBackoff: FCMBackoff
    /// A `Retry-After` shorter than this is stretched to it (a server saying 0 must not spin us).
    var minimumPause: Duration = .seconds(1)

    /// `failures` counts the answers of this kind so far, this one included (≥ 1).
    func decide(_ response: FCMResponse, failures: Int, tokenRefreshed: Bool, random: Double = Double.random(in: 0...1)) -> FCMRetryDecision {
        switch response.status {
        case 200:
            return .finish
        case 401:
            // THIRD_PARTY_AUTH_ERROR (APNs credentials in Firebase) is final; an
            // access token FCM no longer takes gets one refresh.
            if response.errorCode == .thirdPartyAuthError || tokenRefreshed { return .finish }
            return .refreshToken
        case 429:
            return .retry(after: pause(response.retryAfter, else: quotaBackoff.delay(afterFailures: failures, random: random)))
        case 500, 502, 503, 504:
            return .retry(after: pause(response.retryAfter, else: retryBackoff.delay(afterFailures: failures, random: random)))
        default:
            return .finish
        }
    }

    private func pause(_ retryAfter: Duration?, else backoff: Duration) -> Duration {
        guard let retryAfter else { return backoff }
        return max(retryAfter, minimumPause)
    }
}
