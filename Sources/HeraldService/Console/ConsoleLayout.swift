import HeraldPrimitives

/// The page skeleton every console page shares: one inline stylesheet and
/// one tiny inline refresh script, both allowed by hash in a strict
/// Content-Security-Policy (nothing else may load: no external asset, no
/// other script, no frame, forms only to this origin).
enum ConsoleLayout {
    static let stylesheet: StaticString = """
        body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}\
        header{background:#223;padding:8px 16px}header a{color:#fff;margin-right:16px;text-decoration:none}\
        header a.active{text-decoration:underline}main{padding:8px 16px;max-width:1100px}\
        table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ccc;padding:2px 8px;text-align:left;vertical-align:top}\
        th{background:#eee}td.num{text-align:right}.muted{color:#777}.error{color:#b00}\
        .verdict{font-size:16px;font-weight:bold}svg.chart{background:#fff;border:1px solid #ddd;display:block;margin:4px 0}\
        form{margin:8px 0}input{margin-right:8px}section{margin-bottom:16px}
        """
    /// Reloads a page whose `<main>` has `data-refresh` (seconds); the page
    /// reads the same without it.
    static let refreshScript: StaticString = """
        (function(){var m=document.querySelector("main[data-refresh]");\
        if(m){setTimeout(function(){location.reload();},1000*parseInt(m.getAttribute("data-refresh"),10));}})();
        """

    static let contentSecurityPolicy: String = {
        func hash(_ source: StaticString) -> String {
            "'sha256-\(Base64.encode(AccessPolicy.sha256(source.description)))'"
        }
        return "default-src 'none'; style-src \(hash(stylesheet)); script-src \(hash(refreshScript)); img-src data:; "
            + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    }()

    /// A whole page: head, navigation, `body`'s content in `<main>`.
    static func document(
        title: String, active: ConsoleRequest.Page, refreshSeconds: Int? = nil, body: (inout HTMLWriter) -> Void
    ) -> String {
        var html = HTMLWriter()
        html.raw("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
        html.raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
        html.element("title", "Herald — \(title)")
        html.raw("<link rel=\"icon\" href=\"data:,\"><style>")
        html.raw(stylesheet)
        html.raw("</style><script>")
        html.raw(refreshScript)
        html.raw("</script></head>\n<body><header><nav>")
        let links: [(ConsoleRequest.Page, StaticString, String)] = [
            (.overview, "/", "Overview"), (.campaigns, "/console/campaigns", "Campaigns"),
            (.message, "/console/message", "Message lookup"), (.events, "/console/events", "Events"),
        ]
        for (page, href, label) in links {
            if page == active || (active == .messages && page == .message) {
                html.element("a", label, attributes: ["href": href.description, "class": "active"])
            } else {
                html.element("a", label, attributes: ["href": href.description])
            }
        }
        html.raw("</nav></header>\n")
        if let refreshSeconds {
            html.open("main", ["data-refresh": String(refreshSeconds)])
        } else {
            html.raw("<main>")
        }
        html.element("h1", title)
        body(&html)
        html.raw("</main></body></html>\n")
        return html.output
    }

    /// The page for a refusal (its status goes in the HTTP head).
    static func refusal(_ refusal: ConsoleRefusal) -> String {
        document(title: "\(refusal.status.rawValue) \(reasonPhrase(refusal.status))", active: .overview) { html in
            html.element("p", refusal.message, attributes: ["class": "error", "id": "refusal"])
        }
    }

    static func reasonPhrase(_ status: ConsoleRefusal.Status) -> String {
        switch status {
        case .badRequest: "Bad Request"
        case .unauthorized: "Unauthorized"
        case .forbidden: "Forbidden"
        case .notFound: "Not Found"
        case .methodNotAllowed: "Method Not Allowed"
        case .tooManyRequests: "Too Many Requests"
        case .internalError: "Internal Server Error"
        case .unavailable: "Service Unavailable"
        }
    }
}
