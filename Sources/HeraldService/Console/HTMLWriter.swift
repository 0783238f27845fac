/// Builds an HTML document. Markup (tag and attribute names, literal
/// fragments) is `StaticString` only, so no caller data can become markup;
/// every dynamic value is escaped by ``HTMLEscape`` on the way in.
struct HTMLWriter {
    private(set) var output = ""

    init() { output.reserveCapacity(16 * 1024) }

    /// Literal markup from the source code.
    mutating func raw(_ markup: StaticString) {
        output += markup.description
    }

    /// Escaped text.
    mutating func text(_ value: String) {
        output += HTMLEscape.text(value)
    }

    /// `<tag a="v" ...>`; attribute values are escaped.
    mutating func open(_ tag: StaticString, _ attributes: KeyValuePairs<StaticString, String> = [:]) {
        start(tag, attributes)
        output += ">"
    }

    /// `<tag a="v" ...` (not closed); attribute values are escaped.
    private mutating func start(_ tag: StaticString, _ attributes: KeyValuePairs<StaticString, String>) {
        output += "<"
        output += tag.description
        for (name, value) in attributes {
            output += " "
            output += name.description
            output += "=\""
            output += HTMLEscape.attribute(value)
            output += "\""
        }
    }

    mutating func close(_ tag: StaticString) {
        output += "</"
        output += tag.description
        output += ">"
    }

    /// `<tag ...>text</tag>`.
    mutating func element(_ tag: StaticString, _ value: String, attributes: KeyValuePairs<StaticString, String> = [:]) {
        open(tag, attributes)
        text(value)
        close(tag)
    }

    /// A self-closing SVG element (`<rect .../>`).
    mutating func empty(_ tag: StaticString, _ attributes: KeyValuePairs<StaticString, String>) {
        start(tag, attributes)
        output += "/>"
    }

    /// A table row of cells (text).
    mutating func row(_ cells: [String], header: Bool = false) {
        raw("<tr>")
        for cell in cells { header ? element("th", cell) : element("td", cell) }
        raw("</tr>")
    }

    /// A `<table>` with a header row and rows of text cells.
    mutating func table(_ headers: [String], _ rows: [[String]], id: String? = nil) {
        if let id { open("table", ["id": id]) } else { raw("<table>") }
        raw("<thead>")
        row(headers, header: true)
        raw("</thead><tbody>")
        for cells in rows { row(cells) }
        raw("</tbody></table>")
    }
}
