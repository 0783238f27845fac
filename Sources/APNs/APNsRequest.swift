import HeraldCore
public import TLSTransport

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
    public var deadline: EpochTime?
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
        deviceToken: String, headers: [(name: String, value: String)], payload: [UInt8], deadline: EpochTime? = nil,
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
        let timestamp = object["timestamp"]?.numberValue.flatMap(jsonInteger)
        return APNsResponse(status: status, apnsID: apnsID, reason: reason, timestampMilliseconds: timestamp)
    }
}

/// APNs `apns-priority` values.
public struct APNsPriority: RawRepresentable, Hashable, Sendable {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// 10: deliver immediately (alerts). Not allowed with `background`.
    public static let immediately = APNsPriority(rawValue: 10)
    /// 5: deliver considering the device's power; required for `background`.
    public static let considerPower = APNsPriority(rawValue: 5)
    /// 1: prioritize power; may be grouped and delayed.
    public static let prioritizePower = APNsPriority(rawValue: 1)
}

/// APNs `apns-push-type` values Apple documents.
public struct APNsPushType: RawRepresentable, Hashable, Sendable {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let alert = APNsPushType(rawValue: "alert")
    public static let background = APNsPushType(rawValue: "background")
    public static let location = APNsPushType(rawValue: "location")
    public static let voip = APNsPushType(rawValue: "voip")
    public static let complication = APNsPushType(rawValue: "complication")
    public static let fileprovider = APNsPushType(rawValue: "fileprovider")
    public static let mdm = APNsPushType(rawValue: "mdm")
    public static let liveactivity = APNsPushType(rawValue: "liveactivity")
    public static let pushtotalk = APNsPushType(rawValue: "pushtotalk")
    public static let widgets = APNsPushType(rawValue: "widgets")
    /// Every type Apple documents.
    public static let all: Set<APNsPushType> = [
        .alert, .background, .location, .voip, .complication, .fileprovider, .mdm, .liveactivity, .pushtotalk, .widgets,
    ]
}

/// A JSON number as Int64 the way `NSNumber.int64Value` read it (truncated
/// toward zero); nil when out of range.
func jsonInteger(_ number: Double) -> Int64? {
    guard number.isFinite, number > -9.3e18, number < 9.3e18 else { return nil }
    return Int64(number.rounded(.towardZero))
}
