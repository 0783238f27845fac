import HeraldPrimitives

/// A reply as text for a person: `name: value` lines (nested messages as
/// `outer.inner`), repeated messages as aligned tables.
public enum ProtoTable {
    /// A reply message as lines, its repeated messages as tables after them.
    public static func render(_ node: ProtoNode) -> String {
        var pairs: [(String, String)] = []
        var tables: [String] = []
        collect(node, prefix: "", pairs: &pairs, tables: &tables)
        var lines: [String] = []
        let width = pairs.map(\.0.count).max() ?? 0
        for (name, value) in pairs {
            lines.append(name + ":" + String(repeating: " ", count: width - name.count + 1) + value)
        }
        return (lines + tables).joined(separator: "\n")
    }

    private static func collect(_ node: ProtoNode, prefix: String, pairs: inout [(String, String)], tables: inout [String]) {
        guard case .message(let fields) = node else { return }
        for field in fields {
            let name = prefix + field.name
            switch field.node {
            case .scalar(_, let text):
                if !text.isEmpty { pairs.append((name, text)) }  // (--json keeps empty strings)
            case .json(let json):
                var writer = JSONWriter()
                writer.writeLenient(json)
                pairs.append((name, writer.string))
            case .map(let entries):
                if entries.isEmpty { pairs.append((name, "(none)")) }
                for entry in entries { pairs.append(("\(name)[\(entry.name)]", cell(entry.node))) }
            case .message:
                collect(field.node, prefix: name + ".", pairs: &pairs, tables: &tables)
            case .list(let elements):
                if elements.isEmpty {
                    pairs.append((name, "(none)"))
                } else if elements.allSatisfy({ if case .message = $0 { true } else { false } }) {
                    tables.append("\n\(name) (\(elements.count)):\n" + table(elements))
                } else {
                    pairs.append((name, elements.map(cell).joined(separator: ", ")))
                }
            }
        }
    }

    /// Rows of messages as columns (nested messages flattened, one level of names).
    public static func table(_ rows: [ProtoNode]) -> String {
        var columns: [String] = []
        var cells: [[String: String]] = []
        for row in rows {
            var pairs: [(String, String)] = []
            var nested: [String] = []
            collect(row, prefix: "", pairs: &pairs, tables: &nested)
            var map: [String: String] = [:]
            for (name, value) in pairs {
                if !columns.contains(name) { columns.append(name) }
                map[name] = value
            }
            cells.append(map)
        }
        // Columns empty in every row add nothing.
        columns = columns.filter { column in cells.contains { !($0[column] ?? "").isEmpty } }
        let widths = columns.map { column in max(column.count, cells.map { ($0[column] ?? "").count }.max() ?? 0) }
        func line(_ values: [String]) -> String {
            zip(values, widths).map { $0 + String(repeating: " ", count: $1 - $0.count) }.joined(separator: "  ")
                .trimmingTrailingSpaces()
        }
        return ([line(columns)] + cells.map { row in line(columns.map { row[$0] ?? "" }) }).joined(separator: "\n")
    }

    private static func cell(_ node: ProtoNode) -> String {
        switch node {
        case .scalar(_, let text): return text
        case .json(let json):
            var writer = JSONWriter()
            writer.writeLenient(json)
            return writer.string
        default: return ProtoJSON.line(node)
        }
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}
