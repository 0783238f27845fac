import HeraldPrimitives

/// Keep-alive: PING a quiet connection, close one whose PING went
/// unanswered for a whole interval, retire one idle past `idleTimeout`.
extension FCMConnection {
    /// Arms the next keep-alive check one ping interval from now (a timer on
    /// the client's clock: a test's manual clock drives pings and idle closes).
    func scheduleKeepAlive() {
        keepAlive = clock.scheduleTimer(after: pingInterval, on: eventLoop) { [weak self] in
            self?.keepAliveTick()
        }
    }

    private func keepAliveTick() {
        keepAlive = nil
        guard let session, state == .ready || state == .draining else { return }
        scheduleKeepAlive()
        let now = clock.now()
        if let idleTimeout, streams.isEmpty,
           now.timeIntervalSince(lastStreamActivity) >= idleTimeout.timeInterval {
            retire()
            return
        }
        if pingOutstanding {
            close(error: .connectionClosed("PING not answered"))
            return
        }
        if now.timeIntervalSince(lastActivity) >= pingInterval.timeInterval {
            pingOutstanding = true
            do { try session.submitPing(payload: 0) } catch {
                close(error: .connectionClosed("\(error)"))
                return
            }
            afterEvents()
        }
    }
}
