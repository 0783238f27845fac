import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// The caps' arithmetic every store shares (`CapArithmetic`), table-driven,
/// and a randomized run of a store's reservations checked against the
/// promise itself: no window of P holds more than N reserved sends.
@Suite("Cap arithmetic", .storeCaseLimit)
struct CapArithmeticTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var cap: CapLimit
        var instants: [Int64]
        var now: Int64
        var earliest: Int64?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "none counted", cap: CapLimit(count: 1, periodMilliseconds: 100), instants: [], now: 1_000, earliest: 1_000),
        Case(name: "N - 1 counted", cap: CapLimit(count: 3, periodMilliseconds: 100), instants: [990, 995], now: 1_000, earliest: 1_000),
        Case(name: "N counted: the oldest leaves", cap: CapLimit(count: 3, periodMilliseconds: 100), instants: [995, 950, 990],
             now: 1_000, earliest: 1_050),
        Case(name: "N + 1 counted (a display over the cap): the N-th most recent leaves",
             cap: CapLimit(count: 2, periodMilliseconds: 100), instants: [960, 990, 950], now: 1_000, earliest: 1_060),
        Case(name: "exactly one period ago is outside", cap: CapLimit(count: 1, periodMilliseconds: 100), instants: [900],
             now: 1_000, earliest: 1_000),
        Case(name: "one millisecond inside", cap: CapLimit(count: 1, periodMilliseconds: 100), instants: [901], now: 1_000, earliest: 1_001),
        Case(name: "a send recorded after now (a replica's clock ahead) counts", cap: CapLimit(count: 1, periodMilliseconds: 100),
             instants: [1_020], now: 1_000, earliest: 1_120),
        Case(name: "count 0 allows nothing", cap: CapLimit(count: 0, periodMilliseconds: 100), instants: [], now: 1_000, earliest: nil),
        Case(name: "period 0 limits nothing", cap: CapLimit(count: 1, periodMilliseconds: 0), instants: [1_000], now: 1_000, earliest: 1_000),
        Case(name: "an endless period saturates", cap: CapLimit(count: 1, periodMilliseconds: .max), instants: [5], now: 1_000,
             earliest: .max),
    ]

    @Test(arguments: cases) func earliestAllowed(_ c: Case) {
        #expect(CapArithmetic.earliestAllowed(c.cap, instants: c.instants, now: c.now) == c.earliest)
    }

    /// 400 reservations at random instants over ~3 h for 3 users, caps
    /// 2/10 min and 5/1 h and a campaign cap 1/30 min, answered by the store
    /// in a random order of arrival within each minute: every held answer is
    /// reserved when retried at its instant, and no window holds more than a
    /// cap allows.
    @Test(arguments: StoreKind.all) func randomReservationsNeverExceedACapInAnyWindow(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            var random = SplitMix64(seed: 26)
            let caps = [CapLimit(count: 2, periodMilliseconds: 600_000), CapLimit(count: 5, periodMilliseconds: 3_600_000)]
            let campaignCaps = [CapLimit(count: 1, periodMilliseconds: 1_800_000)]
            var pending: [CapReservation] = (0..<400).map { i in
                CapReservation(bundleID: "com.example.app", userID: "user-\(i % 3)", campaignID: "c\(Int.random(in: 0..<3, using: &random))",
                               messageID: "m\(i)", now: now + Int64.random(in: 0..<10_800_000, using: &random),
                               caps: caps, campaignCaps: campaignCaps, notAfter: now + 14_400_000)
            }
            var reserved: [(user: String, campaign: String, at: Int64)] = []
            while !pending.isEmpty {
                // The earliest minute's arrivals, shuffled, as one batch.
                let minute = pending.map(\.now).min()! / 60_000
                let batch = pending.filter { $0.now / 60_000 == minute }.shuffled(using: &random)
                pending.removeAll { $0.now / 60_000 == minute }
                for (request, answer) in zip(batch, try await store.reserveCountedSends(batch)) {
                    switch answer {
                    case .reserved(let at):
                        #expect(at == request.now)
                        reserved.append((request.userID, request.campaignID, at))
                    case .heldUntil(let t):
                        #expect(t > request.now && t < request.notAfter)
                        var retry = request
                        retry.now = t
                        pending.append(retry)
                    case .exhausted:
                        break
                    }
                }
            }
            #expect(reserved.count > 20)
            for user in 0..<3 {
                let mine = reserved.filter { $0.user == "user-\(user)" }
                for cap in caps { Self.expectWithinCap(mine.map(\.at), cap) }
                for campaign in 0..<3 {
                    for cap in campaignCaps { Self.expectWithinCap(mine.filter { $0.campaign == "c\(campaign)" }.map(\.at), cap) }
                }
            }
        }
    }

    /// Every window (t - P, t] ending on a send holds at most N sends.
    static func expectWithinCap(_ instants: [Int64], _ cap: CapLimit, sourceLocation: SourceLocation = #_sourceLocation) {
        let sorted = instants.sorted()
        for (index, end) in sorted.enumerated() {
            let inside = sorted[...index].filter { $0 > end - cap.periodMilliseconds }.count
            #expect(inside <= cap.count, "\(inside) sends in the \(cap.periodMilliseconds) ms up to \(end)", sourceLocation: sourceLocation)
        }
    }
}
