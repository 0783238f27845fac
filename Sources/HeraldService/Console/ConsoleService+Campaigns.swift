import HeraldCore
import HeraldStorage

extension ConsoleService {
    /// How far back in a bundle's event log the recent campaigns are looked for.
    static let campaignLookBack: Int64 = 2_000

    /// A campaign seen in the recent events, with the messages those events
    /// name counted (distinct messages, message- and device-level alike).
    struct RecentCampaign: Sendable, Equatable {
        var id: String
        var lastAt: Int64
        var scheduledIDs: Set<String> = []
        var deliveredIDs: Set<String> = []
        var openedIDs: Set<String> = []
        var failedIDs: Set<String> = []
        var scheduled: Int { scheduledIDs.count }
        var delivered: Int { deliveredIDs.count }
        var opened: Int { openedIDs.count }
        var failed: Int { failedIDs.count }
    }

    /// The campaigns of a bundle's last ``campaignLookBack`` log positions
    /// (one bounded read of the event log; the store has no campaign
    /// index to list them from), most recent first, at most 50.
    func recentCampaigns(bundleID: String) async throws(ConsoleRefusal) -> [RecentCampaign] {
        guard let log = events else { return [] }
        let page = try await read {
            guard let latest = try await log.latestEventCursor(bundleID: bundleID) else { return EventPage(events: [], reached: nil) }
            let start = EventCursor(major: max(0, latest.major - Self.campaignLookBack), minor: 0)
            return try await log.events(bundleID: bundleID, after: start, filter: EventFilter(), limit: Int(Self.campaignLookBack))
        }
        var byID: [String: RecentCampaign] = [:]
        for event in page.events {
            var campaign = byID[event.campaignID] ?? RecentCampaign(id: event.campaignID, lastAt: event.at)
            campaign.lastAt = max(campaign.lastAt, event.at)
            switch event.kind {
            case .scheduled: campaign.scheduledIDs.insert(event.messageID)
            case .handedOff, .sent: campaign.deliveredIDs.insert(event.messageID)
            case .opened: campaign.openedIDs.insert(event.messageID)
            case .failed: campaign.failedIDs.insert(event.messageID)
            default: break
            }
            byID[event.campaignID] = campaign
        }
        return Array(byID.values.sorted { ($0.lastAt, $0.id) > ($1.lastAt, $1.id) }.prefix(50))
    }

    /// A campaign's CampaignReport: the cohorts' counts and rates, their
    /// open rates as bars, the A/B difference with its 95 % interval, and
    /// the verdict in words (``OpenRateVerdict``).
    func campaigns(_ request: ConsoleRequest, _ caller: ConsoleCaller) async throws(ConsoleRefusal) -> String {
        let bundleID = try Self.parameter(request, "bundle", limit: Validator.Limits.bundleID)
        let campaignID = try Self.parameter(request, "campaign", limit: Validator.Limits.campaignID)
        var cohorts: [CohortCounts]?
        var recent: [RecentCampaign]?
        if let bundleID, let campaignID {
            try caller.check(bundleID: bundleID)
            let store = store
            cohorts = try await read {
                try await store.campaignCounts(bundleID: bundleID, campaignID: campaignID, createdFrom: nil, createdBefore: nil)
            }
        } else if let bundleID {
            try caller.check(bundleID: bundleID)
            recent = try await recentCampaigns(bundleID: bundleID)
        }
        return ConsoleLayout.document(title: "Campaigns", active: .campaigns) { html in
            html.raw("<form method=\"get\" action=\"/console/campaigns\"><label>Bundle ")
            html.open("input", ["name": "bundle", "value": bundleID ?? "", "required": "required"])
            html.raw("</label><label>Campaign ")
            html.open("input", ["name": "campaign", "value": campaignID ?? "", "required": "required"])
            html.raw("</label><button type=\"submit\">Show report</button></form>")
            if let recent, let bundleID {
                html.element("h2", "Recent campaigns of \(bundleID)")
                html.element("p", "Campaigns in the bundle's last \(Self.campaignLookBack) events, most recent first, with "
                    + "the messages those events name (name one for its full report).", attributes: ["class": "muted"])
                html.raw("<table id=\"recent-campaigns\"><thead><tr><th>Campaign</th><th>Last event</th><th>Scheduled</th>")
                html.raw("<th>Handed off or sent</th><th>Opened</th><th>Failed</th></tr></thead><tbody>")
                for campaign in recent {
                    html.raw("<tr><td>")
                    html.element("a", campaign.id, attributes: [
                        "href": "/console/campaigns?bundle=\(HTMLEscape.queryValue(bundleID))&campaign=\(HTMLEscape.queryValue(campaign.id))",
                    ])
                    html.raw("</td>")
                    for cell in [ConsoleFormat.time(campaign.lastAt), String(campaign.scheduled), String(campaign.delivered),
                                 String(campaign.opened), String(campaign.failed)] {
                        html.element("td", cell)
                    }
                    html.raw("</tr>")
                }
                html.raw("</tbody></table>")
            }
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
