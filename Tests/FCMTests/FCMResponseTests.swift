@testable import FCM
import HeraldPrimitives
import HeraldTestSupport
import Testing

func googleError(_ code: Int, _ status: String, _ message: String, errorCode: String?, extra: String = "") -> String {
    let detail = errorCode.map { #",{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#($0)"}"# } ?? ""
    return #"{"error":{"code":\#(code),"message":"\#(message)","status":"\#(status)","details":[{"@type":"type.googleapis.com/google.rpc.Other"}\#(detail)\#(extra)]}}"#
}

extension FCMTestSuites {
    @Suite struct FCMErrorBodyTests {
        func parse(_ status: Int, _ body: String, truncated: Bool = false) -> FCMResponse {
            FCMErrorBody.response(status: status, body: bytes(body), truncated: truncated, retryAfter: nil)
        }

        @Test func theIssuesTable() {
            let cases: [(Int, String, FCMErrorCode?, String?)] = [
                (200, #"{"name":"projects/p/messages/0:123"}"#, nil, nil),
                (404, googleError(404, "NOT_FOUND", "Requested entity was not found.", errorCode: "UNREGISTERED"), .unregistered,
                 "Requested entity was not found."),
                (403, googleError(403, "PERMISSION_DENIED", "SenderId mismatch", errorCode: "SENDER_ID_MISMATCH"), .senderIDMismatch,
                 "SenderId mismatch"),
                (400, googleError(400, "INVALID_ARGUMENT", "Invalid value at 'message.android.ttl'", errorCode: "INVALID_ARGUMENT"),
                 .invalidArgument, "Invalid value at 'message.android.ttl'"),
                (429, googleError(429, "RESOURCE_EXHAUSTED", "Quota exceeded", errorCode: "QUOTA_EXCEEDED"), .quotaExceeded, "Quota exceeded"),
                (503, googleError(503, "UNAVAILABLE", "unavailable", errorCode: "UNAVAILABLE"), .unavailable, "unavailable"),
                (500, googleError(500, "INTERNAL", "Internal error", errorCode: "INTERNAL"), .internal, "Internal error"),
                (401, googleError(401, "UNAUTHENTICATED", "APNs auth error", errorCode: "THIRD_PARTY_AUTH_ERROR"), .thirdPartyAuthError,
                 "APNs auth error"),
                // Without FCM's detail a 404/403 is not about the token: never UNREGISTERED or SENDER_ID_MISMATCH.
                (404, googleError(404, "NOT_FOUND", "Project not found", errorCode: nil), .unspecified, "Project not found"),
                (403, googleError(403, "PERMISSION_DENIED", "FCM API disabled", errorCode: nil), .unspecified, "FCM API disabled"),
                (401, googleError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.", errorCode: nil),
                 .unauthenticated, "Request had invalid authentication credentials."),
                (400, googleError(400, "INVALID_ARGUMENT", "x", errorCode: "SOMETHING_NEW"), .invalidArgument, "x"),
            ]
            for (status, body, code, message) in cases {
                let response = parse(status, body)
                #expect(response.status == status)
                #expect(response.errorCode == code, "\(body)")
                #expect(response.errorMessage == message)
            }
            #expect(parse(200, #"{"name":"projects/p/messages/0:123"}"#).messageName == "projects/p/messages/0:123")
            #expect(parse(200, #"{"name":"projects/p/messages/0:123"}"#).isSuccess)
        }

        @Test func badRequestFieldViolationsNameTheField() {
            let violations = #",{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.token","description":"bad"}]}"#
            let response = parse(400, googleError(400, "INVALID_ARGUMENT", "The registration token is not valid", errorCode: "INVALID_ARGUMENT", extra: violations))
            #expect(response.errorMessage == "The registration token is not valid (field: message.token)")
            let named = parse(400, googleError(400, "INVALID_ARGUMENT", "bad message.token", errorCode: "INVALID_ARGUMENT", extra: violations))
            #expect(named.errorMessage == "bad message.token")
        }

        @Test func hostileBodiesGiveClearResponses() {
            let html = "<!DOCTYPE html>\n<html lang=en>\n<title>Error 502 (Server Error)!!1</title>\n<p>Please try again in 30 seconds."
            let badGateway = parse(502, html)
            #expect(badGateway.errorCode == .unavailable)
            #expect(badGateway.errorMessage?.hasPrefix("HTTP 502 with a body that is not a google.rpc.Status: <!DOCTYPE html> <html") == true)
            #expect(parse(500, "").errorMessage == "HTTP 500 with an empty body")
            #expect(parse(500, "").errorCode == .internal)
            #expect(parse(503, #"{"error":{"code":503,"mess"#).errorCode == .unavailable)
            #expect(parse(429, "{}").errorCode == .quotaExceeded)
            #expect(parse(418, "null").errorCode == .unspecified)
            #expect(parse(400, #"{"error":"a string"}"#).errorCode == .invalidArgument)
            #expect(parse(400, #"{"error":{"details":"not an array","message":7}}"#).errorMessage == "HTTP 400")
            #expect(parse(400, #"{"error":{"details":[1,null,{"@type":5},{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":9}]}}"#)
                .errorCode == .invalidArgument)
            let huge = parse(400, #"{"error":{"message":""# + String(repeating: "é", count: 10_000) + #""}}"#)
            #expect(huge.errorMessage!.utf8.count <= 512)
            #expect(huge.errorMessage!.hasSuffix("..."))
            let truncated = parse(503, String(repeating: "x", count: 70_000), truncated: true)
            #expect(truncated.errorMessage!.hasPrefix("HTTP 503 with a body over 65536 bytes"))
            #expect(truncated.errorMessage!.utf8.count <= 512)
            let controls = parse(400, "{\"error\":{\"message\":\"a\\u0000b\\r\\nc\"}}")
            #expect(controls.errorMessage == "a b c")
            let deep = String(repeating: "[", count: 100_000)
            #expect(parse(500, deep).errorCode == .internal)
            #expect(parse(200, "not json").messageName == nil)
            #expect(parse(200, "not json").isSuccess)
            let invalidUTF8 = FCMErrorBody.response(status: 502, body: [0xff, 0xfe, 0x00, 0x41], truncated: false, retryAfter: nil)
            #expect(invalidUTF8.errorMessage?.hasPrefix("HTTP 502 with a body") == true)
        }
    }
}

extension FCMTestSuites {
    @Suite struct FCMRetryAfterTests {
        let now = Timestamp(seconds: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT

        @Test func deltaSecondsAndDates() {
            #expect(FCMRetryAfter.parse("120", now: now) == .seconds(120))
            #expect(FCMRetryAfter.parse(" 7 ", now: now) == .seconds(7))
            #expect(FCMRetryAfter.parse("0", now: now) == .zero)
            #expect(FCMRetryAfter.parse("99999999999999999999999", now: now) == .seconds(3600))
            #expect(FCMRetryAfter.parse("86400", now: now) == .seconds(3600))
            #expect(FCMRetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == .zero)
            #expect(FCMRetryAfter.parse("Sun, 06 Nov 1994 08:50:37 GMT", now: now) == .seconds(60))
            #expect(FCMRetryAfter.parse("Sun, 06 Nov 1994 08:48:37 GMT", now: now) == .zero)
            #expect(FCMRetryAfter.parse("Thu, 01 Jan 1970 00:00:00 GMT", now: now) == .zero)
            #expect(FCMRetryAfter.httpDate("Tue, 29 Feb 2028 23:59:59 GMT") == Timestamp(seconds: 1_835_481_599))
            #expect(FCMRetryAfter.httpDate("Thu, 01 Jan 1970 00:00:00 GMT") == Timestamp(seconds: 0))
        }

        @Test func garbageIsIgnored() {
            for garbage in ["", " ", "-5", "1.5", "soon", "12s", "0x10", "Sun, 06 Nov 1994 08:49:37", "Sunday, 06-Nov-94 08:49:37 GMT",
                            "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT",
                            "Sun, 06 Nov 1994 08:49 GMT", "Sun Nov  6 08:49:37 1994", String(repeating: "9", count: 100), "1\u{0}"] {
                #expect(FCMRetryAfter.parse(garbage, now: now) == nil, "\(garbage)")
            }
        }
    }
}

extension FCMTestSuites {
    @Suite struct FCMBackoffAndPolicyTests {
        @Test func backoffDoublesToItsCapWithJitterInRange() {
            let backoff = FCMBackoff(initial: .seconds(1), maximum: .seconds(60), jitter: 0)
            #expect(backoff.delay(afterFailures: 1, random: 1) == .seconds(1))
            #expect(backoff.delay(afterFailures: 3, random: 1) == .seconds(4))
            #expect(backoff.delay(afterFailures: 40, random: 1) == .seconds(60))
            #expect(backoff.delay(afterFailures: 3, random: 0) == .zero)
            #expect(backoff.delay(afterFailures: 3, random: 0.5) == .seconds(2))
            let half = FCMBackoff(initial: .seconds(10), maximum: .seconds(60), jitter: 0.5)
            #expect(half.delay(afterFailures: 1, random: 0) == .seconds(5))
            for _ in 0..<100 {
                let delay = backoff.delay(afterFailures: 2)
                #expect(delay >= .zero && delay <= .seconds(2))
            }
        }

        let policy = FCMRetryPolicy(
            retryBackoff: FCMBackoff(initial: .seconds(1), maximum: .seconds(60), jitter: 0),
            quotaBackoff: FCMBackoff(initial: .seconds(60), maximum: .seconds(600), jitter: 1))

        @Test func decisions() {
            func decide(_ status: Int, _ code: FCMErrorCode? = nil, retryAfter: Duration? = nil, failures: Int = 1, refreshed: Bool = false) -> FCMRetryDecision {
                policy.decide(FCMResponse(status: status, errorCode: code, retryAfter: retryAfter), failures: failures, tokenRefreshed: refreshed, random: 1)
            }
            #expect(decide(200) == .finish)
            #expect(decide(400, .invalidArgument) == .finish)
            #expect(decide(404, .unregistered) == .finish)
            #expect(decide(403, .senderIDMismatch) == .finish)
            #expect(decide(401, .thirdPartyAuthError) == .finish)
            #expect(decide(401, .unauthenticated) == .refreshToken)
            #expect(decide(401, .unauthenticated, refreshed: true) == .finish)
            #expect(decide(429, .quotaExceeded) == .retry(after: .seconds(60)))
            #expect(decide(429, .quotaExceeded, failures: 2) == .retry(after: .seconds(120)))
            #expect(decide(429, .quotaExceeded, failures: 9) == .retry(after: .seconds(600)))
            #expect(decide(429, .quotaExceeded, retryAfter: .seconds(30)) == .retry(after: .seconds(30)))
            #expect(decide(429, .quotaExceeded, retryAfter: .zero) == .retry(after: .seconds(1)))
            #expect(decide(503, .unavailable) == .retry(after: .seconds(1)))
            #expect(decide(503, .unavailable, failures: 4) == .retry(after: .seconds(8)))
            #expect(decide(503, .unavailable, retryAfter: .seconds(17)) == .retry(after: .seconds(17)))
            #expect(decide(500, .internal, failures: 2) == .retry(after: .seconds(2)))
            #expect(decide(502, .unavailable) == .retry(after: .seconds(1)))
        }
    }
}

extension FCMTestSuites {
    @Suite struct FCMRateBucketTests {
        @Test func burstThenSteadyRate() {
            let start = Timestamp(seconds: 1_000)
            var bucket = FCMRateBucket(ratePerMinute: 600, now: start)  // 10/s, burst 10
            for _ in 0..<10 { #expect(bucket.reserve(now: start) == .zero) }
            #expect(bucket.reserve(now: start) == .milliseconds(100))
            #expect(bucket.reserve(now: start) == .milliseconds(200))
            // Time passing pays the queue back.
            #expect(bucket.reserve(now: start.addingTimeInterval(1)) == .zero)
            // A long pause refills only to the burst.
            let later = start.addingTimeInterval(3600)
            for _ in 0..<10 { #expect(bucket.reserve(now: later) == .zero) }
            #expect(bucket.reserve(now: later) > .zero)
        }

        @Test func releaseGivesBackAndDefaultsAreSane() {
            let now = Timestamp(seconds: 5)
            var bucket = FCMRateBucket(ratePerMinute: 60, now: now)  // 1/s, burst 1
            #expect(bucket.reserve(now: now) == .zero)
            #expect(bucket.reserve(now: now) == .seconds(1))
            bucket.release(now: now)
            #expect(bucket.reserve(now: now) == .seconds(1))
            let production = FCMRateBucket(ratePerMinute: 600_000, now: now)
            #expect(production.capacity == 10_000)
            #expect(production.perSecond == 10_000)
            let tiny = FCMRateBucket(ratePerMinute: 0, now: now)
            #expect(tiny.capacity == 1)
        }

        @Test func theLimiterWaitsOnTheClockAndRespectsTheDeadline() async throws {
            let clock = ManualFCMClock(start: Timestamp(seconds: 100), autoAdvance: true)
            let limiter = FCMRateLimiter(ratePerMinute: 60)
            try await limiter.acquire(project: "p", clock: clock, deadline: nil)
            try await limiter.acquire(project: "q", clock: clock, deadline: nil)  // its own bucket
            #expect(clock.sleeps.isEmpty)
            try await limiter.acquire(project: "p", clock: clock, deadline: nil)
            #expect(clock.sleeps == [.seconds(1)])
            _ = try await limiter.acquire(project: "p", clock: clock, deadline: clock.now().addingTimeInterval(5))
            await #expect(throws: FCMError.deadlineExceeded) {
                try await limiter.acquire(project: "p", clock: clock, deadline: clock.now().addingTimeInterval(0.5))
            }
            #expect(clock.sleeps == [.seconds(1), .seconds(1)])
        }
    }
}
