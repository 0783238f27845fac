import HeraldPrimitives

/// Keep-alive: PING a quiet connection, close one whose PING went
/// unanswered for a whole interval, retire one idle past `idleTimeout`.
extension HTTP2ClientConnection {
    /// Arms the next keep-alive check one ping interval from now (a timer on
    /// the pool's clock: a test's manual clock drives pings and idle closes).
    func scheduleKeepAlive() {
        eventLoop.assertInEventLoop()
        keepAlive = clock.scheduleTimer(after: pingInterval, on: eventLoop) { [weak self] in
            self?.keepAliveTick()
        }
    }

    private func keepAliveTick() {
        eventLoop.assertInEventLoop()
        keepAlive = nil
        guard let session else { return }
        let action = machine.keepAliveTick(
            now: clock.now(), lastActivity: lastActivity, lastStreamActivity: lastStreamActivity,
            hasStreams: !streams.isEmpty, pingInterval: pingInterval, idleTimeout: idleTimeout)
        if action == .stop { return }
        scheduleKeepAlive()
        switch action {
        case .stop, .none:
            break
        case .retireIdle:
            retire()
        case .closeUnanswered:
            close(error: .connectionClosed("PING not answered"))
        case .ping:
            do { try session.submitPing(payload: 0) } catch {
                close(error: .connectionClosed("\(error)"))
                return
            }
            afterEvents()
        }
    }
}
