import HeraldCore
import HeraldStorage
import Testing

@testable import HeraldService

@Suite("Read side at the edge: page tokens, what Schedule refuses or warns about, timelines")
struct ReadSideWireTests {
    static let hash = PageToken.queryHash(bundleID: "com.a", userID: "u", campaignID: nil, states: [])

    @Test("a page token that is not one Herald issued is refused", arguments: [
        ("", PageToken.Problem.malformed), ("zz", .malformed), ("0", .malformed),
        (String(repeating: "ab", count: 17), .malformed),          // too short to hold a cursor
        (String(repeating: "0", count: 257), .tooLong(257)),
        ("02" + String(repeating: "00", count: 20), .malformed),   // unknown version
        ("01" + String(repeating: "00", count: 16) + "ff", .malformed),  // id not UTF-8
    ])
    func hostileTokens(text: String, problem: PageToken.Problem) {
        #expect(throws: problem) { try PageToken.decode(text, expectedHash: Self.hash) }
    }

    @Test func aTokenRoundTripsOnlyForItsOwnQuery() throws {
        let token = PageToken(cursor: MessageCursor(createdAt: 1_800_000_000_123, id: "01a2-x"), queryHash: Self.hash)
        let text = token.encoded()
        #expect(try PageToken.decode(text, expectedHash: Self.hash) == token)
        for other in [
            PageToken.queryHash(bundleID: "com.a", userID: "v", campaignID: nil, states: []),
            PageToken.queryHash(bundleID: "com.a", userID: "u", campaignID: "c", states: []),
            PageToken.queryHash(bundleID: "com.a", userID: "u", campaignID: nil, states: [.sent]),
            // Fields do not run into each other: ("com.au", "") is not ("com.a", "u").
            PageToken.queryHash(bundleID: "com.au", userID: "", campaignID: nil, states: []),
        ] {
            #expect(throws: PageToken.Problem.otherQuery) { try PageToken.decode(text, expectedHash: other) }
        }
        // States are a set: their order does not change the query.
        #expect(PageToken.queryHash(bundleID: "b", userID: "u", campaignID: nil, states: [.sent, .failed])
                == PageToken.queryHash(bundleID: "b", userID: "u", campaignID: nil, states: [.failed, .sent]))
    }

    @Test func scheduleIsRefusedWhenNoRouteOrSenderCouldDeliver() {
        let coverage = DeliveryCoverage(
            apnsEnvironments: { $0 == "com.routed" ? [.sandbox] : [] }, fcmRouted: { _ in false })
        let ios = coverage.missing(bundleID: "com.unrouted", platform: .ios)
        #expect(ios?.contains("com.unrouted") == true && ios?.contains("PLATFORM_IOS") == true && ios?.contains("APNs route") == true)
        #expect(coverage.missing(bundleID: "com.routed", platform: .ios) == nil)
        #expect(coverage.missing(bundleID: "com.routed", platform: .android)?.contains("FCM") == true)
        #expect(DeliveryCoverage.unchecked.missing(bundleID: "any", platform: .android) == nil)

        #expect(coverage.warnings(bundleID: "com.routed", platform: .ios, userID: "u", devices: []).first?
            .contains("no registered PLATFORM_IOS device") == true)
        func device(_ environment: APNsEnvironment?) -> Device {
            Device(bundleID: "com.routed", platform: .ios, userID: "u", deviceToken: "t", locale: "en", timezone: "UTC",
                   environment: environment, registeredAt: 0)
        }
        #expect(coverage.warnings(bundleID: "com.routed", platform: .ios, userID: "u", devices: [device(.sandbox)]).isEmpty)
        // No environment counts as production, which no route serves here.
        #expect(coverage.warnings(bundleID: "com.routed", platform: .ios, userID: "u", devices: [device(nil)]).first?
            .contains("serve only sandbox") == true)
    }

    @Test func theTimelineIsInTimeOrderAndSaysHowTheMessageEnded() {
        var message = StoredMessage(
            id: "m", bundleID: "b", platform: .ios, userID: "u", campaignID: "c", idempotencyKey: "k",
            deliveryMethod: .contextAware, abTest: true, windowStart: 0, windowEnd: 100, dueAt: 0, state: .superseded,
            request: [], createdAt: 10, updatedAt: 20)
        var detail = MessageDetail(message: message, milestones: MessageMilestones(), supersededBy: "m2", outcomes: [], inFlight: [])
        #expect(MessageTimeline.entries(detail).map(\.event) == [.scheduled, .superseded])
        #expect(MessageTimeline.entries(detail).last?.reason?.contains("m2") == true)

        message.state = .displayed
        message.updatedAt = 50
        detail = MessageDetail(message: message, milestones: MessageMilestones(handedOffAt: 12, sentAt: 40, displayedAt: 45, openedAt: 45),
                               supersededBy: nil, outcomes: [], inFlight: [])
        let entries = MessageTimeline.entries(detail)
        #expect(entries.map(\.event) == [.scheduled, .handedOff, .sent, .displayed, .opened])
        #expect(entries.map(\.at) == [10, 12, 40, 45, 45])
        #expect(entries[2].reason?.contains("fallback") == true)
    }
}
