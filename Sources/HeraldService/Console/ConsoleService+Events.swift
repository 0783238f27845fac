import HeraldCore
import HeraldStorage

extension ConsoleService {
    /// The last events of a bundle (StreamEvents' log), newest first; the
    /// page reloads itself every 5 s where scripts run.
    ///
    /// The log is read forward from a position ``eventLookBack`` before the
    /// bundle's latest (one bounded read): in a log that interleaves many
    /// bundles the page may show fewer than ``eventCount``.
    func eventsPage(_ request: ConsoleRequest, _ caller: ConsoleCaller) async throws(ConsoleRefusal) -> String {
        let bundleID = try Self.parameter(request, "bundle", limit: Validator.Limits.bundleID)
        var shown: [DeliveryEvent]?
        if let bundleID {
            try caller.check(bundleID: bundleID)
            guard let log = events else { throw ConsoleRefusal(.notFound, "this store keeps no event log") }
            shown = try await read {
                guard let latest = try await log.latestEventCursor(bundleID: bundleID) else { return [] }
                let start = EventCursor(major: max(0, latest.major - Self.eventLookBack), minor: 0)
                let page = try await log.events(bundleID: bundleID, after: start, filter: EventFilter(), limit: Int(Self.eventLookBack))
                return Array(page.events.suffix(Self.eventCount).reversed())
            }
        }
        return ConsoleLayout.document(title: "Events", active: .events, refreshSeconds: bundleID == nil ? nil : 5) { html in
            html.raw("<form method=\"get\" action=\"/console/events\"><label>Bundle ")
            html.open("input", ["name": "bundle", "value": bundleID ?? "", "required": "required"])
            html.raw("</label><button type=\"submit\">Show events</button></form>")
            guard let shown, let bundleID else {
                html.element("p", "Name a bundle to see its last events.", attributes: ["class": "muted"])
                return
            }
            html.element("p", "The last \(shown.count) events of \(bundleID), newest first (refreshed every 5 s).",
                         attributes: ["class": "muted", "id": "event-summary"])
            html.raw("<table id=\"events\"><thead><tr><th>At</th><th>Event</th><th>Message</th><th>Campaign</th><th>Device</th><th>Reason</th></tr></thead><tbody>")
            for event in shown {
                html.raw("<tr>")
                html.element("td", ConsoleFormat.time(event.at))
                html.element("td", event.kind.rawValue)
                html.raw("<td>")
                html.element("a", event.messageID, attributes: [
                    "href": "/console/message?bundle=\(HTMLEscape.queryValue(bundleID))&id=\(HTMLEscape.queryValue(event.messageID))",
                ])
                html.raw("</td>")
                html.element("td", event.campaignID)
                html.element("td", ConsoleFormat.clip(event.deviceToken ?? ""))
                html.element("td", ConsoleFormat.clip(event.reason ?? "", 200))
                html.raw("</tr>")
            }
            html.raw("</tbody></table>")
        }
    }
}
