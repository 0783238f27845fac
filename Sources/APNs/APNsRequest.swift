public import HeraldPrimitives

/// One notification for one device, with headers already rendered by the domain core.
public struct APNsRequest: Sendable {
    /// The device token in hex (goes into `:path /3/device/<token>`).
    public var deviceToken: String
    /// APNs headers in order: `apns-push-type`, `apns-topic`, `apns-priority`,
    /// `apns-expiration`, `apns-collapse-id`, `apns-id` (names lowercase).
    public var headers: [(name: String, value: String)]
    /// The JSON payload (compact UTF-8, at most 4096 bytes).
    public var payload: [UInt8]
    /// Give up (``APNsError/deadlineExceeded``) when this moment passes, retries included.
    public var deadline: Timestamp?
    /// One attempt only (TTL 0, "now or never"): no retry after 5xx, a reset
    /// or a timeout. A refused stream (never processed) is still resent.
    public var singleAttempt: Bool
    /// Called just before the request's HEADERS are written to a connection
    /// (every attempt, once the connection has room for it): the caller makes
    /// the hand-over durable, then calls `done` (from any thread); the bytes
    /// wait for it. An error fails the request with
    /// ``APNsError/handOverNotRecorded(_:)``, unsent. A callback rather than
    /// an async function: no task per request, and the caller can batch.
    public var willHandOver: APNsHandOverHook?

    public init(
        deviceToken: String, headers: [(name: String, value: String)], payload: [UInt8], deadline: Timestamp? = nil,
        singleAttempt: Bool = false, willHandOver: APNsHandOverHook? = nil
    ) {
        self.deviceToken = deviceToken
        self.headers = headers
        self.payload = payload
        self.deadline = deadline
        self.singleAttempt = singleAttempt
        self.willHandOver = willHandOver
    }

    /// The value of the first header named `name`.
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// See ``APNsRequest/willHandOver``: record, then call `done` (nil: recorded).
public typealias APNsHandOverHook = @Sendable (_ done: @escaping @Sendable ((any Error)?) -> Void) -> Void

/// What APNs answered for one request.
public struct APNsResponse: Sendable, Equatable {
    /// HTTP status (200 success).
    public var status: Int
    /// The `apns-id` APNs echoed or assigned.
    public var apnsID: String?
    /// The reason from the JSON body (nil on 200).
    public var reason: APNsReason?
    /// For 410: the last time APNs confirmed the token was no longer valid, ms since 1970.
    public var timestampMilliseconds: Int64?
    /// Requests the client sent for this answer, retries included.
    public var attempts = 1

    public init(status: Int, apnsID: String?, reason: APNsReason? = nil, timestampMilliseconds: Int64? = nil) {
        self.status = status
        self.apnsID = apnsID
        self.reason = reason
        self.timestampMilliseconds = timestampMilliseconds
    }

    /// True for 200.
    public var isSuccess: Bool { status == 200 }

    /// Parses APNs' error body `{"reason":"…","timestamp":…}`; tolerant of garbage.
    static func parse(status: Int, apnsID: String?, body: [UInt8]) -> APNsResponse {
        guard status != 200, !body.isEmpty,
              let object = (try? JSONParser.parse(body))?.objectValue else {
            return APNsResponse(status: status, apnsID: apnsID)
        }
        let reason = object["reason"]?.stringValue.map(APNsReason.init(rawValue:))
        let timestamp = object["timestamp"]?.numberValue.flatMap(JSONValue.integer(fromNumber:))
        return APNsResponse(status: status, apnsID: apnsID, reason: reason, timestampMilliseconds: timestamp)
    }
}
