import HeraldCore
import HeraldPrimitives

/// Input: any bytes, parsed as one JSON document. For a document that
/// parses, the writer's output must parse back to an equal value, and
/// writing that value again must give the same bytes (the writer is
/// deterministic, so payloads rendered twice are byte-identical).
enum JSONTarget {
    static func run(_ input: [UInt8]) {
        guard let value = try? JSONParser.parse(input) else { return }
        var writer = JSONWriter()
        do {
            try writer.write(value)
        } catch {
            // The parser rejects non-finite numbers, so every parsed value is writable.
            preconditionFailure("parsed value not writable: \(error)")
        }
        let written = writer.finish()
        let reparsed: JSONValue
        do {
            reparsed = try JSONParser.parse(written)
        } catch {
            preconditionFailure("writer output does not parse: \(error)")
        }
        precondition(reparsed == value, "parse → write → parse changed the value")
        var again = JSONWriter()
        try? again.write(reparsed)
        precondition(again.finish() == written, "writing the same value twice gave different bytes")
    }
}
