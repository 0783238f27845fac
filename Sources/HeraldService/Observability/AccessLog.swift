import GRPCEngine
public import Logging
#if canImport(Glibc)
import Glibc
#endif

/// One line per finished RPC: time, method, status code, duration, peer and
/// the bundle the request named. Never metadata (tokens) and never content.
///
/// Written to a file (`--access-log PATH`, opened for append; each line is one
/// write(2) to the page cache) or, without one, logged at debug level.
public final class AccessLog: Sendable {
    enum Sink {
        case file(Int32)
        case logger(Logger)
    }

    let sink: Sink
    let format: LogFormat

    /// Appends to `path` (created 0640 if missing).
    /// - Throws: `ConfigurationError` when the file cannot be opened.
    public init(path: String, format: LogFormat) throws {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
        guard fd >= 0 else {
            throw ConfigurationError(description: "--access-log: cannot open \(path): \(String(cString: strerror(errno)))")
        }
        sink = .file(fd)
        self.format = format
    }

    /// Logs each call at debug level through `logger`.
    public init(logger: Logger, format: LogFormat) {
        sink = .logger(logger)
        self.format = format
    }

    deinit {
        if case .file(let fd) = sink { _ = close(fd) }
    }

    func record(_ call: GRPCFinishedCall, method: String) {
        let milliseconds = Double(call.durationNanoseconds) / 1_000_000
        let duration = String(Double(Int((milliseconds * 1000).rounded())) / 1000)
        switch sink {
        case .logger(let logger):
            logger.debug("rpc", metadata: [
                "method": "\(method)", "code": "\(call.code.name)", "duration_ms": "\(duration)",
                "peer": "\(call.peer ?? "-")", "bundle": "\(call.annotation ?? "-")",
            ])
        case .file(let fd):
            HeraldLogHandler.writeLine(line(call, method: method, duration: duration), fd: fd)
        }
    }

    func line(_ call: GRPCFinishedCall, method: String, duration: String) -> String {
        let time = LogLine.timestamp()
        switch format {
        case .text:
            return "\(time) method=\(method) code=\(call.code.name) duration_ms=\(duration) "
                + "peer=\(call.peer ?? "-") bundle=\(LogLine.textValue(call.annotation ?? "-"))"
        case .json:
            var line = "{\"ts\":\"\(time)\",\"method\":"
            LogLine.appendJSONString(method, to: &line)
            line += ",\"code\":\"\(call.code.name)\",\"duration_ms\":\(duration),\"peer\":"
            LogLine.appendJSONString(call.peer ?? "", to: &line)
            line += ",\"bundle\":"
            if let bundle = call.annotation { LogLine.appendJSONString(bundle, to: &line) } else { line += "null" }
            return line + "}"
        }
    }
}
