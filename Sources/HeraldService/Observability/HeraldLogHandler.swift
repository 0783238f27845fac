public import Logging
#if canImport(Glibc)
import Glibc
#endif

/// How log lines look: `text` (`TIME LEVEL label: message key=value…`) or
/// `json` (one object per line: `ts`, `level`, `label`, `msg`, then the
/// metadata as strings). Both carry UTC timestamps with milliseconds.
public enum LogFormat: String, Sendable, CaseIterable {
    case text
    case json
}

/// A swift-log handler writing one line per event to standard error, in
/// `LogFormat`. Each line is one write(2), so lines of concurrent threads
/// never interleave.
public struct HeraldLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let format: LogFormat

    public init(label: String, format: LogFormat, level: Logger.Level) {
        self.label = label
        self.format = format
        self.logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { $1 } }
        if let extra = event.metadata { all.merge(extra) { $1 } }
        let line = Self.render(
            format: format, timestamp: LogLine.timestamp(), level: event.level, label: label,
            message: event.message.description, metadata: all)
        Self.writeLine(line, fd: 2)
    }

    /// One event as one line (without the newline).
    static func render(
        format: LogFormat, timestamp: String, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata
    ) -> String {
        let keys = metadata.keys.sorted()
        switch format {
        case .text:
            var line = "\(timestamp) \(level) \(label): \(message)"
            for key in keys { line += " \(key)=\(LogLine.textValue(metadata[key]!.description))" }
            return line
        case .json:
            var line = "{\"ts\":\"\(timestamp)\",\"level\":\"\(level)\",\"label\":"
            LogLine.appendJSONString(label, to: &line)
            line += ",\"msg\":"
            LogLine.appendJSONString(message, to: &line)
            for key in keys where !["ts", "level", "label", "msg"].contains(key) {
                line += ","
                LogLine.appendJSONString(key, to: &line)
                line += ":"
                LogLine.appendJSONString(metadata[key]!.description, to: &line)
            }
            return line + "}"
        }
    }

    /// Writes `line` and a newline with one write(2) (retried on EINTR and
    /// short writes); a log line that cannot be written is dropped.
    static func writeLine(_ line: String, fd: Int32) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}
