import HeraldCore

/// Inline SVG charts for console pages: no script, no external asset, no
/// `style` attribute (presentation attributes only, which the
/// Content-Security-Policy does not govern). Every bar is a
/// `<rect class="bar">` with a `<title>` giving its label and value, so a
/// test (or a person hovering) can count and read them.
enum SVGChart {
    static let width = 640.0
    static let height = 160.0
    static let palette = ["#3366cc", "#cc3333", "#339966", "#cc9933"]

    /// One bar per value, labelled below; the tallest fills the height.
    static func bars(_ html: inout HTMLWriter, label: String, _ values: [(label: String, value: Double, text: String)]) {
        let plotHeight = height - 24
        let top = max(values.map(\.value).max() ?? 0, 0)
        let slot = values.isEmpty ? width : width / Double(values.count)
        open(&html, label: label)
        for (index, bar) in values.enumerated() {
            let h = top > 0 ? max(0, bar.value) / top * (plotHeight - 14) : 0
            let x = Double(index) * slot + slot * 0.15
            html.open("rect", [
                "class": "bar", "x": ConsoleFormat.fixed(x), "y": ConsoleFormat.fixed(plotHeight - h),
                "width": ConsoleFormat.fixed(slot * 0.7), "height": ConsoleFormat.fixed(h), "fill": palette[0],
            ])
            html.element("title", "\(bar.label): \(bar.text)")
            html.close("rect")
            html.element("text", bar.text, attributes: [
                "x": ConsoleFormat.fixed(x + slot * 0.35), "y": ConsoleFormat.fixed(max(10, plotHeight - h - 3)),
                "text-anchor": "middle", "font-size": "10",
            ])
            html.element("text", bar.label, attributes: [
                "x": ConsoleFormat.fixed(x + slot * 0.35), "y": ConsoleFormat.fixed(height - 8),
                "text-anchor": "middle", "font-size": "10",
            ])
        }
        html.raw("</svg>")
    }

    /// Series over time as polylines (a gap where a point is missing),
    /// x from `from` to `to` (ms), y from 0 to the largest value.
    static func lines(
        _ html: inout HTMLWriter, label: String, from: Int64, to: Int64, unit: String,
        _ series: [(name: String, points: [(at: Int64, value: Double)])]
    ) {
        let plotHeight = height - 20
        let top = max(series.flatMap { $0.points.map(\.value) }.max() ?? 0, 1)
        let span = Double(max(to - from, 1))
        open(&html, label: label)
        html.empty("line", ["x1": "0", "y1": ConsoleFormat.fixed(plotHeight), "x2": ConsoleFormat.fixed(width),
                            "y2": ConsoleFormat.fixed(plotHeight), "stroke": "#999999"])
        html.element("text", "max \(ConsoleFormat.fixed(top)) \(unit)", attributes: ["x": "4", "y": "12", "font-size": "10"])
        html.element("text", "−60 min", attributes: ["x": "4", "y": ConsoleFormat.fixed(height - 4), "font-size": "10"])
        html.element("text", "now", attributes: [
            "x": ConsoleFormat.fixed(width - 4), "y": ConsoleFormat.fixed(height - 4), "font-size": "10", "text-anchor": "end",
        ])
        for (index, line) in series.enumerated() {
            let color = palette[index % palette.count]
            var segment: [String] = []
            var previous: Int64?
            // A step alone is drawn as one step's width at its height (a
            // line of one point would be invisible).
            var lone = ""
            func flush() {
                if segment.count == 1 { segment.insert(lone, at: 0) }
                if !segment.isEmpty {
                    html.empty("polyline", [
                        "class": "series", "points": segment.joined(separator: " "), "fill": "none", "stroke": color,
                        "stroke-width": "1.5",
                    ])
                }
                segment = []
            }
            for point in line.points {
                // A missing sample (more than one step apart) breaks the line.
                if let previous, point.at - previous > ConsoleHistory.stepMilliseconds { flush() }
                let x = Double(point.at - from) / span * width
                let y = plotHeight - max(0, point.value) / top * (plotHeight - 16)
                if segment.isEmpty {
                    let stepWidth = Double(ConsoleHistory.stepMilliseconds) / span * width
                    lone = "\(ConsoleFormat.fixed(max(0, x - stepWidth))),\(ConsoleFormat.fixed(y))"
                }
                segment.append("\(ConsoleFormat.fixed(x)),\(ConsoleFormat.fixed(y))")
                previous = point.at
            }
            flush()
            html.element("text", line.name, attributes: [
                "x": ConsoleFormat.fixed(width - 4), "y": ConsoleFormat.fixed(12 + Double(index) * 12), "font-size": "10",
                "text-anchor": "end", "fill": color,
            ])
        }
        html.raw("</svg>")
    }

    /// A difference with its interval on a horizontal axis through zero:
    /// a whisker from `low` to `high` and a dot at `value` (rate differences,
    /// labelled in percentage points).
    static func interval(_ html: inout HTMLWriter, label: String, value: Double, low: Double, high: Double) {
        let h = 70.0
        let reach = max(abs(low), abs(high), abs(value), 0.01) * 1.2
        func x(_ v: Double) -> String { ConsoleFormat.fixed(width / 2 + v / reach * (width / 2 - 10)) }
        html.open("svg", [
            "xmlns": "http://www.w3.org/2000/svg", "class": "chart interval", "viewBox": "0 0 \(Int(width)) \(Int(h))",
            "width": "\(Int(width))", "height": "\(Int(h))", "role": "img", "aria-label": label,
        ])
        html.element("title", label)
        html.empty("line", ["x1": "0", "y1": "35", "x2": ConsoleFormat.fixed(width), "y2": "35", "stroke": "#999999"])
        html.empty("line", ["class": "zero", "x1": x(0), "y1": "10", "x2": x(0), "y2": "60", "stroke": "#333333"])
        html.element("text", "0", attributes: ["x": x(0), "y": "68", "font-size": "10", "text-anchor": "middle"])
        html.empty("line", ["class": "ci", "x1": x(low), "y1": "35", "x2": x(high), "y2": "35", "stroke": palette[0], "stroke-width": "4"])
        html.empty("circle", ["class": "estimate", "cx": x(value), "cy": "35", "r": "6", "fill": palette[1]])
        html.element("text", OpenRateVerdict.points(low), attributes: ["x": x(low), "y": "25", "font-size": "10", "text-anchor": "middle"])
        html.element("text", OpenRateVerdict.points(high), attributes: ["x": x(high), "y": "25", "font-size": "10", "text-anchor": "middle"])
        html.raw("</svg>")
    }

    private static func open(_ html: inout HTMLWriter, label: String) {
        html.open("svg", [
            "xmlns": "http://www.w3.org/2000/svg", "class": "chart", "viewBox": "0 0 \(Int(width)) \(Int(height))",
            "width": "\(Int(width))", "height": "\(Int(height))", "role": "img", "aria-label": label,
        ])
        html.element("title", label)
    }
}
