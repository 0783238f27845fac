import GRPCEngine
import HeraldCore
import HeraldPrimitives
import HeraldProtos
import HeraldStorage

/// `herald.v1.PushService/CampaignReport`: per (cohort, assignment) counts
/// and rates of one campaign, and the A/B open-rate difference between the
/// cohorts with a 95 % interval (``OpenRateComparison``). One aggregate
/// query over a covering index (see `SchemaV4`).
struct CampaignReportService: Sendable {
    static let path = "/herald.v1.PushService/CampaignReport"

    let policy: AccessPolicy
    let store: any MessageReadSide

    func report(_ request: GRPCRequest) async throws -> [UInt8] {
        let caller = try policy.authenticate(request.metadata)
        let (bundleID, campaignID, from, before) = try ProtobufC.withUnpacked(
            Herald__V1__CampaignReportRequest.self, from: request.message
        ) { wire in
            var decoder = RequestDecoder()
            let bundleID = decoder.required(wire.bundle_id, "bundle_id", maxBytes: Validator.Limits.bundleID)
            let campaignID = decoder.required(wire.campaign_id, "campaign_id", maxBytes: Validator.Limits.campaignID)
            let from = Self.time(&decoder, wire.created_after, "created_after")
            let before = Self.time(&decoder, wire.created_before, "created_before")
            if let from, let before, before <= from {
                decoder.check("must be after created_after", "created_before")
            }
            try decoder.finish()
            return (bundleID, campaignID, from, before)
        }
        try ReadSideAccess.check(caller, bundleID: bundleID)
        let cohorts = try await store.campaignCounts(
            bundleID: bundleID, campaignID: campaignID, createdFrom: from, createdBefore: before)
        return Self.response(cohorts)
    }

    private static func time(_ decoder: inout RequestDecoder, _ pointer: UnsafeMutablePointer<CChar>?, _ field: String) -> Int64? {
        guard let text = decoder.optionalString(pointer, field) else { return nil }
        do throws(RFC3339ParseError) {
            return try RFC3339.parse(text).milliseconds
        } catch {
            decoder.check("not an RFC 3339 timestamp: \(error.reason)", field)
            return nil
        }
    }

    static func rate(_ part: Int, of whole: Int) -> Double { whole == 0 ? 0 : Double(part) / Double(whole) }

    static func response(_ cohorts: [CohortCounts]) -> [UInt8] {
        let arena = CArena()
        var response = Herald__V1__CampaignReportResponse.initialized()
        // In the enums' order: context-aware before traditional, A/B split before caller-chosen.
        let ordered = cohorts.sorted { ($0.deliveryMethod.wire.rawValue, $0.abTest ? 0 : 1) < ($1.deliveryMethod.wire.rawValue, $1.abTest ? 0 : 1) }
        let entries = ordered.map { c in
            arena.message(Herald__V1__CampaignCohortReport.self) {
                $0.cohort = c.deliveryMethod.wire
                $0.assignment = c.abTest ? HERALD__V1__ASSIGNMENT__ASSIGNMENT_AB_SPLIT : HERALD__V1__ASSIGNMENT__ASSIGNMENT_CALLER_CHOSEN
                $0.scheduled = UInt64(c.scheduled)
                $0.handed_off = UInt64(c.handedOff)
                $0.sent = UInt64(c.sent)
                $0.fallback_sent = UInt64(c.fallbackSent)
                $0.displayed = UInt64(c.displayed)
                $0.opened = UInt64(c.opened)
                $0.cancelled = UInt64(c.cancelled)
                $0.failed = UInt64(c.failed)
                $0.expired = UInt64(c.expired)
                $0.no_devices = UInt64(c.noDevices)
                $0.delivered = UInt64(c.delivered)
                $0.deferred = UInt64(c.deferred)
                $0.suppressed = UInt64(c.suppressed)
                $0.display_rate = rate(c.displayed, of: c.delivered)
                $0.open_rate = rate(c.opened, of: c.delivered)
            }
        }
        response.n_cohorts = entries.count
        response.cohorts = arena.pointerArray(entries)
        func abCohort(_ method: DeliveryMethod) -> OpenRateComparison.Cohort {
            let c = cohorts.first { $0.abTest && $0.deliveryMethod == method }
            return OpenRateComparison.Cohort(opened: c?.opened ?? 0, delivered: c?.delivered ?? 0)
        }
        let contextAware = abCohort(.contextAware)
        let traditional = abCohort(.traditional)
        if let comparison = OpenRateComparison(contextAware: contextAware, traditional: traditional) {
            response.ab_comparison = arena.message(Herald__V1__AbComparison.self) {
                $0.context_aware_open_rate = comparison.contextAwareRate
                $0.traditional_open_rate = comparison.traditionalRate
                $0.open_rate_difference = comparison.difference
                $0.ci95_low = comparison.low
                $0.ci95_high = comparison.high
                $0.standard_error = comparison.standardError
                $0.context_aware_delivered = UInt64(contextAware.delivered)
                $0.traditional_delivered = UInt64(traditional.delivered)
            }
        }
        return withExtendedLifetime(arena) { ProtobufC.pack(&response) }
    }
}
