#if canImport(Glibc)
import Glibc
#endif
import Logging

/// The process's file-descriptor limit, and the connection cap that fits in it.
enum ProcessLimits {
    /// Descriptors kept for everything that is not a client connection: the
    /// store's files, outbound APNs/FCM connections, the listening socket,
    /// event loops, logs. A quarter of the limit, at least 64, at most 256.
    static func reservedDescriptors(limit: Int) -> Int {
        min(256, max(64, limit / 4))
    }

    /// Raises the soft descriptor limit to the hard one (as nginx and Go's
    /// runtime do), then returns `requested` lowered to what fits under it, so
    /// the server refuses connections at its own cap instead of failing
    /// `accept(2)` — and the APNs client can still open its sockets.
    static func connectionCap(_ requested: Int, logger: Logger) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            let code = errno
            logger.warning("getrlimit(RLIMIT_NOFILE) failed; connection cap unchanged", metadata: ["errno": "\(code)"])
            return requested
        }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 {
                limit = raised
            } else {
                let code = errno
                logger.info("could not raise the descriptor limit", metadata: [
                    "soft": "\(limit.rlim_cur)", "hard": "\(limit.rlim_max)", "errno": "\(code)",
                ])
            }
        }
        let soft = Int(clamping: limit.rlim_cur)
        let available = soft - reservedDescriptors(limit: soft)
        let cap = max(1, min(requested, available))
        if cap < requested {
            logger.warning("connection cap lowered to fit the descriptor limit", metadata: [
                "requested": "\(requested)", "cap": "\(cap)", "nofile": "\(limit.rlim_cur)",
            ])
        }
        return cap
    }
}
