import HeraldCore
import HeraldStorage

extension ConsoleService {
    /// A campaign's CampaignReport: the cohorts' counts and rates, their
    /// open rates as bars, the A/B difference with its 95 % interval, and
    /// the verdict in words (``OpenRateVerdict``).
    func campaigns(_ request: ConsoleRequest, _ caller: ConsoleCaller) async throws(ConsoleRefusal) -> String {
        let bundleID = try Self.parameter(request, "bundle", limit: Validator.Limits.bundleID)
        let campaignID = try Self.parameter(request, "campaign", limit: Validator.Limits.campaignID)
        var cohorts: [CohortCounts]?
        if let bundleID, let campaignID {
            try caller.check(bundleID: bundleID)
            let store = store
            cohorts = try await read {
                try await store.campaignCounts(bundleID: bundleID, campaignID: campaignID, createdFrom: nil, createdBefore: nil)
            }
        } else if let bundleID {
            try caller.check(bundleID: bundleID)
        }
        return ConsoleLayout.document(title: "Campaigns", active: .campaigns) { html in
            html.raw("<form method=\"get\" action=\"/console/campaigns\"><label>Bundle ")
            html.open("input", ["name": "bundle", "value": bundleID ?? "", "required": "required"])
            html.raw("</label><label>Campaign ")
            html.open("input", ["name": "campaign", "value": campaignID ?? "", "required": "required"])
            html.raw("</label><button type=\"submit\">Show report</button></form>")
            guard let cohorts, let bundleID, let campaignID else {
                html.element("p", "Name a bundle and a campaign to see its report.", attributes: ["class": "muted"])
                return
            }
            html.element("h2", "\(campaignID) in \(bundleID)")
            guard !cohorts.isEmpty else {
                html.element("p", "No messages of this campaign.", attributes: ["id": "no-campaign"])
                return
            }
            let ordered = cohorts.sorted { ($0.deliveryMethod.rawValue, $0.abTest ? 0 : 1) < ($1.deliveryMethod.rawValue, $1.abTest ? 0 : 1) }
            func name(_ c: CohortCounts) -> String { "\(c.deliveryMethod.rawValue) (\(c.abTest ? "A/B split" : "caller-chosen"))" }
            html.table(
                ["Cohort", "Scheduled", "Delivered", "Sent", "Fallback sent", "Displayed", "Opened", "Failed", "Expired",
                 "Cancelled", "No devices", "Deferred", "Suppressed", "Display rate", "Open rate"],
                ordered.map { c in
                    [name(c), String(c.scheduled), String(c.delivered), String(c.sent), String(c.fallbackSent), String(c.displayed),
                     String(c.opened), String(c.failed), String(c.expired), String(c.cancelled), String(c.noDevices),
                     String(c.deferred), String(c.suppressed),
                     ConsoleFormat.percent(CampaignReportService.rate(c.displayed, of: c.delivered)),
                     ConsoleFormat.percent(CampaignReportService.rate(c.opened, of: c.delivered))]
                }, id: "cohort-table")
            html.element("h3", "Open rate by cohort")
            SVGChart.bars(&html, label: "Open rate by cohort", ordered.map { c in
                let rate = CampaignReportService.rate(c.opened, of: c.delivered)
                return (label: name(c), value: rate, text: ConsoleFormat.percent(rate))
            })
            func abCohort(_ method: DeliveryMethod) -> OpenRateComparison.Cohort {
                let c = cohorts.first { $0.abTest && $0.deliveryMethod == method }
                return OpenRateComparison.Cohort(opened: c?.opened ?? 0, delivered: c?.delivered ?? 0)
            }
            let contextAware = abCohort(.contextAware)
            let traditional = abCohort(.traditional)
            let comparison = OpenRateComparison(contextAware: contextAware, traditional: traditional)
            let verdict = OpenRateVerdict(comparison, contextAwareDelivered: contextAware.delivered,
                                          traditionalDelivered: traditional.delivered)
            html.element("h3", "A/B: context-aware minus traditional open rate")
            html.element("p", verdict.text, attributes: ["class": "verdict", "id": "verdict", "data-kind": verdict.kind.rawValue])
            if let comparison {
                SVGChart.interval(&html, label: "Open-rate difference with its 95 % interval",
                                  value: comparison.difference, low: comparison.low, high: comparison.high)
                html.element("p", "Context-aware \(ConsoleFormat.percent(comparison.contextAwareRate)) of \(contextAware.delivered); "
                    + "traditional \(ConsoleFormat.percent(comparison.traditionalRate)) of \(traditional.delivered) "
                    + "(A/B-split messages only).", attributes: ["class": "muted"])
            }
        }
    }
}
