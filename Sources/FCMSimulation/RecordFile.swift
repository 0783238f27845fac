import HeraldPrimitives
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `recordTo` file: one JSON line per accepted message, appended with
/// one `write` each (no user-space buffer), so a `kill -9` right after a 200
/// loses nothing that was answered.
final class RecordFile: Sendable {
    private let descriptor: Mutex<Int32>

    init(path: String) throws(POSIXFileError) {
        // Appends: a restart on the same file keeps one record of everything.
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o666)
        guard fd >= 0 else { throw POSIXFileError("open", path: path, code: errno) }
        descriptor = Mutex(fd)
    }

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

    /// Appends one line; false when the write failed (the line is lost, the
    /// message is still answered).
    @discardableResult
    func append(_ line: [UInt8]) -> Bool {
        descriptor.withLock { fd in fd >= 0 && POSIXFile.writeAll(fd, line) }
    }

    func closeFile() {
        descriptor.withLock { fd in
            if fd >= 0 {
                _ = close(fd)
                fd = -1
            }
        }
    }

    deinit { closeFile() }
}
