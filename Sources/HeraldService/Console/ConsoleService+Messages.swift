import HeraldCore
import HeraldStorage

extension ConsoleService {
    /// GetMessage's view: a message by bundle and message id or idempotency
    /// key, its timeline (``MessageTimeline``) and each device's outcome.
    func message(_ request: ConsoleRequest, _ caller: ConsoleCaller) async throws(ConsoleRefusal) -> String {
        let bundleID = try Self.parameter(request, "bundle", limit: Validator.Limits.bundleID)
        let messageID = try Self.parameter(request, "id", limit: 64)
        let key = try Self.parameter(request, "key", limit: Validator.Limits.idempotencyKey)
        if messageID != nil && key != nil {
            throw ConsoleRefusal(.badRequest, "give a message id or an idempotency key, not both")
        }
        var detail: MessageDetail?
        var looked = false
        if let bundleID {
            try caller.check(bundleID: bundleID)
            let store = store
            if let messageID {
                looked = true
                detail = try await read { try await store.messageDetail(bundleID: bundleID, messageID: messageID) }
            } else if let key {
                looked = true
                detail = try await read { try await store.messageDetail(bundleID: bundleID, idempotencyKey: key) }
            }
        }
        return ConsoleLayout.document(title: "Message lookup", active: .message) { html in
            html.raw("<form method=\"get\" action=\"/console/message\"><label>Bundle ")
            html.open("input", ["name": "bundle", "value": bundleID ?? "", "required": "required"])
            html.raw("</label><label>Message id ")
            html.open("input", ["name": "id", "value": messageID ?? ""])
            html.raw("</label><label>or idempotency key ")
            html.open("input", ["name": "key", "value": key ?? ""])
            html.raw("</label><button type=\"submit\">Look up</button></form>")
            guard looked else {
                html.element("p", "Name a bundle and a message id or an idempotency key.", attributes: ["class": "muted"])
                return
            }
            guard let detail else {
                html.element("p", messageID.map { "No message \(ErrorText.quote($0)) in \(ErrorText.quote(bundleID ?? ""))." }
                    ?? "No message holds idempotency key \(ErrorText.quote(key ?? "")) in \(ErrorText.quote(bundleID ?? "")).",
                    attributes: ["id": "not-found"])
                return
            }
            let m = detail.message
            html.element("h2", "Message \(m.id)")
            var rows: [[String]] = [
                ["Bundle", m.bundleID], ["State", m.state.rawValue], ["User", m.userID], ["Campaign", m.campaignID],
                ["Platform", m.platform.rawValue], ["Delivery method", m.deliveryMethod.rawValue],
                ["Assignment", m.abTest ? "A/B split" : "caller-chosen"], ["Idempotency key", m.idempotencyKey ?? "—"],
                ["Window", "\(ConsoleFormat.time(m.windowStart)) to \(ConsoleFormat.time(m.windowEnd))"],
                ["Due", ConsoleFormat.time(m.dueAt)], ["Created", ConsoleFormat.time(m.createdAt)],
                ["Attempts", String(m.attempts)], ["Last error", ConsoleFormat.clip(m.lastError ?? "—", 300)],
            ]
            if let superseded = detail.supersededBy { rows.append(["Replaced by", superseded]) }
            html.table(["Field", "Value"], rows, id: "message-table")
            html.open("p")
            html.element("a", "Recent messages of user \(m.userID)", attributes: [
                "id": "user-link",
                "href": "/console/messages?bundle=\(HTMLEscape.queryValue(m.bundleID))&user=\(HTMLEscape.queryValue(m.userID))",
            ])
            html.close("p")
            html.element("h3", "Timeline")
            let timeline = MessageTimeline.entries(detail)
            html.table(["Event", "At", "Reason"], timeline.prefix(Self.maxRows).map { entry in
                ["\(entry.event)", ConsoleFormat.time(entry.at), ConsoleFormat.clip(entry.reason ?? "", 300)]
            }, id: "timeline")
            if timeline.count > Self.maxRows {
                html.element("p", "The first \(Self.maxRows) of \(timeline.count) entries (herald get shows all).",
                             attributes: ["class": "muted"])
            }
            html.element("h3", "Devices")
            var devices = detail.outcomes.map { o in
                [ConsoleFormat.clip(o.deviceToken), o.kind.rawValue, ConsoleFormat.clip(o.reason ?? "", 300),
                 ConsoleFormat.clip(o.providerMessageID ?? ""), o.httpStatus.map(String.init) ?? "", ConsoleFormat.time(o.at)]
            }
            devices += detail.inFlight.map { [ConsoleFormat.clip($0.deviceToken), "in flight", "", "", "", ConsoleFormat.time($0.at)] }
            html.table(["Device token", "Outcome", "Reason", "Provider id", "HTTP", "At"], Array(devices.prefix(Self.maxRows)), id: "devices")
            if devices.count > Self.maxRows {
                html.element("p", "The first \(Self.maxRows) of \(devices.count) devices (herald get shows up to "
                    + "\(MessageDetail.maxDeviceEntries)).", attributes: ["class": "muted"])
            }
        }
    }

    /// ListMessages' first page: a user's 50 newest messages, each linked
    /// to its lookup.
    func messages(_ request: ConsoleRequest, _ caller: ConsoleCaller) async throws(ConsoleRefusal) -> String {
        guard let bundleID = try Self.parameter(request, "bundle", limit: Validator.Limits.bundleID),
              let userID = try Self.parameter(request, "user", limit: Validator.Limits.userID)
        else { throw ConsoleRefusal(.badRequest, "name a bundle and a user (bundle=…&user=…)") }
        try caller.check(bundleID: bundleID)
        let store = store
        let page = try await read {
            try await store.listMessages(MessageListQuery(bundleID: bundleID, userID: userID, limit: ListMessagesService.defaultPageSize))
        }
        return ConsoleLayout.document(title: "Messages of \(userID)", active: .messages) { html in
            html.element("p", "The \(ListMessagesService.defaultPageSize) newest messages of user \(userID) in \(bundleID).",
                         attributes: ["class": "muted"])
            html.raw("<table id=\"user-messages\"><thead><tr><th>Message</th><th>State</th><th>Campaign</th><th>Method</th><th>Created</th></tr></thead><tbody>")
            for row in page.items {
                let m = row.message
                html.raw("<tr><td>")
                html.element("a", m.id, attributes: [
                    "href": "/console/message?bundle=\(HTMLEscape.queryValue(m.bundleID))&id=\(HTMLEscape.queryValue(m.id))",
                ])
                html.raw("</td>")
                for cell in [m.state.rawValue, m.campaignID, m.deliveryMethod.rawValue, ConsoleFormat.time(m.createdAt)] {
                    html.element("td", cell)
                }
                html.raw("</tr>")
            }
            html.raw("</tbody></table>")
        }
    }
}
