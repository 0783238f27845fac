import ProviderHTTP2
import HeraldPrimitives

/// What APNs adds to the shared HTTP/2 pool: the ES256 provider token as
/// each stream's `authorization` (token auth; nothing with a certificate),
/// `apns-id` kept from the answer, the JSON reason parsed on the connection's
/// loop, and ExpiredProviderToken retiring the token and its connection.
struct APNsHTTP2Adapter: HTTP2ClientAdapter {
    typealias Response = APNsResponse
    /// The provider token the stream went out with.
    typealias Credential = ProviderTokenCache.Token

    static var keptHeader: StaticString { "apns-id" }
    static var keptHeaderMaximumBytes: Int { .max }

    let tokens: ProviderTokenCache?

    func credential(now: Timestamp) throws(HTTP2ClientError) -> ProviderTokenCache.Token? {
        guard let tokens else { return nil }
        do {
            return try tokens.current(now: now)
        } catch {
            throw .credentials("cannot sign provider token: \(error)")
        }
    }

    func header(for credential: ProviderTokenCache.Token) -> (name: String, value: String) {
        ("authorization", credential.authorization)
    }

    func response(to answer: HTTP2ClientAnswer, credential: ProviderTokenCache.Token?) -> (response: APNsResponse, retireConnection: Bool) {
        let response = APNsResponse.parse(status: answer.status, apnsID: answer.keptHeader, body: answer.body)
        guard response.reason == .expiredProviderToken, let credential else { return (response, false) }
        // One token per connection: retire both; the retry opens a fresh connection and token.
        tokens?.expire(credential)
        return (response, true)
    }
}

extension APNsError {
    /// The pool's error as APNs callers know it.
    init(_ error: HTTP2ClientError) {
        switch error {
        case .deadlineExceeded: self = .deadlineExceeded
        case .connectFailed(let why, let retryable): self = .connectFailed(why, retryable: retryable)
        case .connectionClosed(let why): self = .connectionClosed(why)
        case .streamRefused: self = .streamRefused
        case .streamReset(let code): self = .streamReset(code)
        case .responseTimeout: self = .responseTimeout
        case .shutdown: self = .shutdown
        case .cancelled: self = .cancelled
        case .handOverNotRecorded(let why): self = .handOverNotRecorded(why)
        case .credentials(let why): self = .configuration(why)
        }
    }
}
