import HeraldPrimitives

/// The lines of the `recordTo` file (a ``SimulatorRecordFile``): one JSON
/// line per accepted message.
enum RecordFile {
    /// `{"service":"fcm","project":…,"token":…,"message":{…}}` (or `topic` /
    /// `condition` instead of `token`), the message written compactly.
    static func line(for accepted: FCMAcceptedMessage, message: JSONValue) -> [UInt8] {
        var fields: JSONObject = [
            "service": "fcm", "project": .string(accepted.projectID), "message": message, "name": .string(accepted.name),
        ]
        if let topic = accepted.topic {
            fields["topic"] = .string(topic)
        } else if let condition = accepted.condition {
            fields["condition"] = .string(condition)
        } else {
            fields["token"] = .string(accepted.token)
        }
        var writer = JSONWriter()
        writer.writeLenient(.object(fields))
        var bytes = writer.bytes
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}
