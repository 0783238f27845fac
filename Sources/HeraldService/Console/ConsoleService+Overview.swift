import HeraldCore
import HeraldPrimitives

extension ConsoleService {
    /// Serving state, counts, lag, the hour's charts, provider pools and
    /// the policy's holds. What a caller sees follows Status's rule
    /// (``StatusService/View``): without a token, counts only.
    func overview(_ caller: ConsoleCaller) -> String {
        let view = caller.statusView
        let figures = status.snapshot()
        let now = now()
        let uptime = (ContinuousClock.now - status.startedAt).components.seconds
        return ConsoleLayout.document(title: "Overview", active: .overview, refreshSeconds: 10) { html in
            html.raw("<section id=\"serving\"><h2>Serving</h2>")
            var rows: [[String]] = [["State", "\(status.state.current)"]]
            if view != .anonymous { rows.append(["Version", status.version]) }
            rows.append(["Uptime", ConsoleFormat.duration(seconds: uptime)])
            rows.append(["Started", ConsoleFormat.time(status.startedAtMilliseconds)])
            if let store = figures.store {
                rows.append(["Store", store.kind])
                rows.append(["Store health", store.ok && status.state.readiness.storeWritable ? "healthy" : "unhealthy"])
            }
            rows.append(["Oldest due lag", ConsoleFormat.milliseconds(figures.oldestDueLagMilliseconds)])
            rows.append(["Figures taken", ConsoleFormat.milliseconds(max(0, (ContinuousClock.now - figures.takenAt).nanoseconds / 1_000_000)) + " ago"])
            html.table(["Figure", "Value"], rows, id: "serving-table")
            if view == .anonymous {
                html.raw("<p class=\"muted\">Counts only: <a href=\"/?signin=1\" id=\"signin\">sign in</a> ")
                html.raw("with a token to see the version, provider pools and their errors.</p>")
            }
            html.raw("</section>")

            html.raw("<section id=\"states\"><h2>Messages by state</h2>")
            let counts = MessageState.allCases.map { ($0, figures.counts[$0] ?? 0) }
            html.table(["State", "Messages"], counts.map { [$0.0.rawValue, String($0.1)] }, id: "state-counts")
            SVGChart.bars(&html, label: "Messages by state", counts.map { (label: $0.0.rawValue, value: Double($0.1), text: String($0.1)) })
            html.raw("</section>")

            let points = history.points(now: now)
            let from = now - Int64(ConsoleHistory.capacity) * ConsoleHistory.stepMilliseconds
            html.raw("<section id=\"history\"><h2>The last hour (10 s steps)</h2>")
            if points.isEmpty {
                html.element("p", "No samples yet: the first 10 s step is recorded about 10 s after start.", attributes: ["class": "muted"])
            }
            SVGChart.lines(&html, label: "Sends and failures per 10 s", from: from, to: now, unit: "per 10 s", [
                (name: "sends", points: points.map { (at: $0.at, value: Double($0.sends)) }),
                (name: "failures", points: points.map { (at: $0.at, value: Double($0.failures)) }),
            ])
            SVGChart.lines(&html, label: "Dispatch lateness (mean ms)", from: from, to: now, unit: "ms", [
                (name: "lateness", points: points.compactMap { p in p.meanLatenessMilliseconds.map { (at: p.at, value: $0) } }),
            ])
            SVGChart.lines(&html, label: "Oldest due lag (s)", from: from, to: now, unit: "s", [
                (name: "due lag", points: points.map { (at: $0.at, value: Double($0.dueLagMilliseconds) / 1000) }),
            ])
            let sends = points.reduce(0) { $0 + $1.sends }
            let failures = points.reduce(0) { $0 + $1.failures }
            html.element("p", "This hour: \(sends) sent, \(failures) failed.", attributes: ["id": "hour-totals"])
            html.raw("</section>")

            html.raw("<section id=\"pools\"><h2>Provider pools</h2>")
            let pools = figures.pools.filter { view.shows($0.bundleIDs) }
            if view == .anonymous {
                html.element("p", "Hidden without a token (route names carry team ids and bundles).", attributes: ["class": "muted"])
            } else {
                html.table(
                    ["Service", "Route", "Endpoint", "Connections", "In flight", "Auth failures", "Last error", "At"],
                    pools.map { pool in
                        [pool.service, pool.route, pool.endpoint, String(pool.connectionsOpen), String(pool.streamsInFlight),
                         String(pool.authFailures.values.reduce(0, +)), ConsoleFormat.clip(pool.lastError ?? "—", 300),
                         pool.lastErrorAt.map { ConsoleFormat.time($0) } ?? "—"]
                    }, id: "pool-table")
            }
            html.raw("</section>")

            html.raw("<section id=\"policy\"><h2>Delivery policy since start</h2>")
            let holds = counters.holdsByReason
            let suppressions = counters.suppressionsByReason
            var policyRows = HoldReason.allCases.map { ["held", $0.rawValue, String(holds[$0] ?? 0)] }
            policyRows += SuppressReason.allCases.map { ["suppressed", $0.rawValue, String(suppressions[$0] ?? 0)] }
            html.table(["Action", "Reason", "Devices"], policyRows, id: "policy-table")
            html.raw("</section>")
        }
    }
}
