import ProviderHTTP2
import HeraldPrimitives

/// One HTTP/2 request the pool sends (a message or a token request).
typealias FCMHTTPRequest = HTTP2ClientRequest

/// What came back for one request (`keptHeader`: `retry-after`).
typealias FCMHTTPAnswer = HTTP2ClientAnswer

/// Why a request got no HTTP answer.
typealias FCMTransportError = HTTP2ClientError

/// The pool of one FCM or OAuth token endpoint.
typealias FCMHTTP2Pool = HTTP2ClientPool<FCMHTTP2Adapter>

/// What FCM adds to the shared HTTP/2 pool: nothing per stream (the access
/// token travels in the request's own headers), `retry-after` kept from the
/// answer (64 bytes at most), the answer returned as it came.
struct FCMHTTP2Adapter: HTTP2ClientAdapter {
    typealias Response = HTTP2ClientAnswer
    typealias Credential = Never

    static var keptHeader: StaticString { "retry-after" }
    static var keptHeaderMaximumBytes: Int { 64 }

    func credential(now: Timestamp) throws(HTTP2ClientError) -> Never? { nil }

    func header(for credential: Never) -> (name: String, value: String) {}

    func response(to answer: HTTP2ClientAnswer, credential: Never?) -> (response: HTTP2ClientAnswer, retireConnection: Bool) {
        (answer, false)
    }
}
