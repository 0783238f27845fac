import GRPCEngine
import HeraldCore
import HeraldPrimitives
import Testing

@testable import HeraldService

@Suite("Console: escaping, request parsing, auth")
struct ConsoleHostileTests {
    @Test("text and attributes: markup characters escaped, NUL and control characters replaced", arguments: [
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("\" onmouseover='x' a=\"", "&quot; onmouseover=&#39;x&#39; a=&quot;"),
        ("a&b", "a&amp;b"),
        ("nul\u{0}bel\u{7}c1\u{85}", "nul\u{FFFD}bel\u{FFFD}c1\u{FFFD}"),
        ("tab\tnl\n", "tab\tnl\n"),
        ("é 中 🎉", "é 中 🎉"),
    ])
    func escaping(input: String, escaped: String) {
        #expect(HTMLEscape.text(input) == escaped)
        #expect(HTMLEscape.attribute(input) == escaped)
    }

    @Test("the writer escapes every value it is given, in text and attributes")
    func writerEscapes() {
        var html = HTMLWriter()
        html.element("p", "<img src=x onerror=alert(1)>", attributes: ["title": "\"><script>x</script>"])
        #expect(html.output == "<p title=\"&quot;&gt;&lt;script&gt;x&lt;/script&gt;\">&lt;img src=x onerror=alert(1)&gt;</p>")
    }

    @Test("long values are clipped around an ellipsis, short ones kept")
    func clip() {
        let token = String(repeating: "a", count: 100) + String(repeating: "z", count: 100)
        let clipped = ConsoleFormat.clip(token)
        #expect(clipped.count == 80 && clipped.hasPrefix("aaaa") && clipped.hasSuffix("zzzz") && clipped.contains("…"))
        #expect(ConsoleFormat.clip("short") == "short")
        #expect(ConsoleFormat.clip(String(repeating: "x", count: 80)) == String(repeating: "x", count: 80))
    }

    @Test("query values are percent-encoded for links")
    func queryValues() {
        #expect(HTMLEscape.queryValue("a b&c=d/é") == "a%20b%26c%3Dd%2F%C3%A9")
    }

    @Test("hostile query strings are refused with a reason", arguments: [
        ("/console/message?bundle=a&id=%ff%fe", "not valid UTF-8"),
        ("/console/message?bundle=a%00b", "contains NUL"),
        ("/console/message?bundle=a&id=%zz", "malformed percent-escape"),
        ("/console/message?bundle=a&id=%4", "malformed percent-escape"),
        ("/console/message?bundle=a&bundle=b", "given twice"),
        ("/console/message?id=" + String(repeating: "x", count: 1025), "the limit is 1024"),
        ("/console/message?" + String(repeating: "x", count: 33), "the limit is 32"),
        ("/console/message?" + (0..<17).map { "p\($0)=1" }.joined(separator: "&"), "too many query parameters"),
    ])
    func refusals(uri: String, reason: String) {
        #expect {
            _ = try ConsoleRequest.parse(uri: uri)
        } throws: { error in
            guard let refusal = error as? ConsoleRefusal else { return false }
            return refusal.status == .badRequest && refusal.message.contains(reason)
        }
    }

    @Test("paths are matched exactly: traversal and unknown paths are not console pages", arguments: [
        "/console/../metrics", "/console/%2e%2e/metrics", "/console/message/", "/etc/passwd", "/console//message", "/metrics", "/healthz",
    ])
    func unknownPaths(uri: String) throws {
        #expect(try ConsoleRequest.parse(uri: uri) == nil)
    }

    @Test("pages and decoded values")
    func parses() throws {
        let request = try #require(try ConsoleRequest.parse(uri: "/console/message?bundle=com.x&id=+a%20b+&key="))
        #expect(request.page == .message)
        #expect(request.value("bundle") == "com.x")
        #expect(request.value("id") == "a b")
        #expect(request.value("key") == nil)
        #expect(try ConsoleRequest.parse(uri: "/")?.page == .overview)
        #expect(try ConsoleRequest.parse(uri: "/console/")?.page == .overview)
        #expect(try ConsoleRequest.parse(uri: "/console/events?bundle=a")?.page == .events)
    }

    static let policy = AccessPolicy(grants: [
        AccessPolicy.Grant(label: "app", token: "app-token", bundleIDs: ["com.app"]),
        AccessPolicy.Grant(label: "ops", token: "ops-token", bundleIDs: ["*"]),
    ])

    static func basic(_ credentials: String) -> String { "Basic " + Base64.encode(Array(credentials.utf8)) }

    @Test("Basic auth: the token is the password; a bad or unknown one is 401, another bundle 403")
    func auth() throws {
        let policy = Self.policy
        guard case .anonymous = try ConsoleCaller.identify(policy, authorization: nil) else { Issue.record("anonymous"); return }
        let app = try ConsoleCaller.identify(policy, authorization: Self.basic("anyone:app-token"))
        try app.check(bundleID: "com.app")
        #expect(app.statusView == .bundles(["com.app"]))
        #expect(throws: ConsoleRefusal(.forbidden, "token \"app\" does not allow bundle \"com.other\"")) {
            try app.check(bundleID: "com.other")
        }
        let userOnly = try ConsoleCaller.identify(policy, authorization: Self.basic("ops-token:"))
        #expect(userOnly.statusView == .everything)
        for header in [Self.basic("x:wrong"), "Basic !!!", "Bearer app-token", Self.basic("no-colon"), "Basic", "Token app-token"] {
            #expect {
                _ = try ConsoleCaller.identify(policy, authorization: header)
            } throws: { ($0 as? ConsoleRefusal)?.status == .unauthorized }
        }
        #expect {
            try ConsoleCaller.anonymous.check(bundleID: "com.app")
        } throws: { ($0 as? ConsoleRefusal)?.status == .unauthorized }
        guard case .open = try ConsoleCaller.identify(AccessPolicy(), authorization: nil) else { Issue.record("open"); return }
    }

    @Test("a refusal page escapes its message and a 401 carries the Basic challenge")
    func refusalPage() {
        let response = ConsoleService.refused(ConsoleRefusal(.unauthorized, "<b>no</b>"))
        #expect(response.status == 401)
        #expect(response.headers.contains { $0.0 == "WWW-Authenticate" && $0.1.hasPrefix("Basic realm=") })
        #expect(response.body.contains("&lt;b&gt;no&lt;/b&gt;"))
        #expect(!response.body.contains("<b>no</b>"))
    }

    @Test("the CSP allows nothing external: the stylesheet and the script by hash only")
    func contentSecurityPolicy() {
        let csp = ConsoleLayout.contentSecurityPolicy
        #expect(csp.hasPrefix("default-src 'none'; style-src 'sha256-"))
        #expect(csp.contains("script-src 'sha256-"))
        #expect(!csp.contains("unsafe"))
        #expect(csp.contains("frame-ancestors 'none'"))
        let expected = Base64.encode(AccessPolicy.sha256(ConsoleLayout.stylesheet.description))
        #expect(csp.contains("'sha256-\(expected)'"))
    }
}

@Suite("Console: charts and the history ring")
struct ConsoleChartTests {
    static func count(_ needle: String, in haystack: String) -> Int {
        haystack.components(separatedBy: needle).count - 1
    }

    @Test("a bar chart draws one bar per value, scaled to the largest, with escaped labels", arguments: [0, 1, 4, 13])
    func bars(count: Int) {
        var html = HTMLWriter()
        let values = (0..<count).map { (label: "<c\($0)>", value: Double($0), text: "\($0)") }
        SVGChart.bars(&html, label: "test", values)
        #expect(Self.count("<rect class=\"bar\"", in: html.output) == count)
        #expect(!html.output.contains("<c0>"))
        #expect(html.output.hasPrefix("<svg ") && html.output.hasSuffix("</svg>"))
    }

    @Test("all-zero bars have zero height (no division by zero)")
    func zeroBars() {
        var html = HTMLWriter()
        SVGChart.bars(&html, label: "zeros", [(label: "a", value: 0, text: "0"), (label: "b", value: 0, text: "0")])
        #expect(Self.count("height=\"0.0\"", in: html.output) == 2)
        #expect(!html.output.contains("nan"))
    }

    @Test("a series with a missing step is drawn as two lines")
    func lineGaps() {
        var html = HTMLWriter()
        let step = ConsoleHistory.stepMilliseconds
        SVGChart.lines(&html, label: "gaps", from: 0, to: 100 * step, unit: "x", [
            (name: "s", points: [(at: step, value: 1), (at: 2 * step, value: 2), (at: 5 * step, value: 3)]),
        ])
        #expect(Self.count("<polyline class=\"series\"", in: html.output) == 2)
        // The lone point at step 5 spans one step (x 12.8 → 32.0 of 640 for 100 steps).
        #expect(html.output.contains("points=\"25.6,"))
    }

    @Test("the interval chart marks zero, the interval and the estimate")
    func interval() {
        var html = HTMLWriter()
        SVGChart.interval(&html, label: "ab", value: 0.041, low: 0.023, high: 0.059)
        #expect(html.output.contains("class=\"zero\"") && html.output.contains("class=\"ci\"") && html.output.contains("class=\"estimate\""))
        #expect(html.output.contains(">2.3<") && html.output.contains(">5.9<"))
    }

    @Test("the first sample is a baseline; each later step records the counters' differences")
    func historySteps() {
        var history = ConsoleHistory()
        let step = ConsoleHistory.stepMilliseconds
        #expect(history.record(.init(sends: 10, failures: 1), at: 1_000) == .baseline)
        #expect(history.record(.init(sends: 12, failures: 1), at: 5_000) == .ignored)
        let point = ConsoleHistory.Point(at: step, sends: 5, failures: 2, meanLatenessMilliseconds: 30, dueLagMilliseconds: 7)
        #expect(history.record(.init(sends: 15, failures: 3, latenessTotalMilliseconds: 60, latenessCount: 2, dueLagMilliseconds: 7),
                               at: step + 10) == .point(point))
        // From the past (a clock step back): ignored.
        #expect(history.record(.init(sends: 99), at: 2_000) == .ignored)
        // A counter that went down counts as zero; no dispatch: no lateness.
        guard case .point(let reset) = history.record(.init(sends: 1, failures: 3, latenessTotalMilliseconds: 60, latenessCount: 2),
                                                      at: 3 * step) else { Issue.record("no point"); return }
        #expect(reset.sends == 0 && reset.failures == 0 && reset.meanLatenessMilliseconds == nil && reset.at == 3 * step)
        #expect(history.points(now: 3 * step).map(\.at) == [step, 3 * step])
    }

    @Test("the ring keeps the last 360 steps, oldest first, and forgets older ones")
    func historyBounded() {
        var history = ConsoleHistory()
        let step = ConsoleHistory.stepMilliseconds
        for index in 0...1_000 {
            _ = history.record(.init(sends: index), at: Int64(index) * step)
        }
        #expect(history.count == ConsoleHistory.capacity)
        let points = history.points(now: 1_000 * step)
        #expect(points.count == 360)
        #expect(points.first?.at == 641 * step && points.last?.at == 1_000 * step)
        #expect(points.allSatisfy { $0.sends == 1 })
        // An hour later, nothing of it is in the window.
        #expect(history.points(now: 1_361 * step).isEmpty)
    }
}
