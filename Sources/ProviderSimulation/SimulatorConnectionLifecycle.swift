/// Where one simulator connection is in its life, with what each stage
/// holds: the session only while serving, the GOAWAY's last stream only once
/// one was sent. Moves only forward; an impossible move fails in debug builds
/// (`assertionFailure`) and is ignored in release builds.
///
/// Generic over the session so the transitions are tested without nghttp2.
package struct SimulatorConnectionLifecycle<Session> {
    package enum State {
        /// In the pipeline; the TLS handshake has not finished.
        case handshaking
        /// The HTTP/2 session serves; `goAwayLastStreamID` once a GOAWAY
        /// naming a last stream was sent (later streams are refused).
        case serving(Session, goAwayLastStreamID: Int32?)
        /// Output drained, the channel closes after the last write; nothing
        /// more is read or written. `hadSession`: a session had started.
        case closing(hadSession: Bool)
        /// Out of the pipeline.
        case closed
    }

    package private(set) var state: State = .handshaking

    package init() {}

    /// The session, while serving.
    package var session: Session? {
        if case .serving(let session, _) = state { return session }
        return nil
    }

    /// The last stream a sent GOAWAY named, while serving.
    package var goAwayLastStreamID: Int32? {
        if case .serving(_, let last) = state { return last }
        return nil
    }

    /// Whether the connection is closing or closed.
    package var isClosing: Bool {
        switch state {
        case .closing, .closed: true
        case .handshaking, .serving: false
        }
    }

    /// handshaking → serving. False (nothing changes) when the connection is
    /// already closing: a handshake that finishes late is not served.
    package mutating func start(_ session: Session) -> Bool {
        switch state {
        case .handshaking:
            state = .serving(session, goAwayLastStreamID: nil)
            return true
        case .closing, .closed:
            return false
        case .serving:
            assertionFailure("a simulator connection started its session twice")
            return false
        }
    }

    /// A GOAWAY naming `lastStreamID` was submitted (serving only).
    package mutating func goAwaySent(lastStreamID: Int32) {
        guard case .serving(let session, _) = state else {
            assertionFailure("GOAWAY recorded on a simulator connection that is not serving (\(state))")
            return
        }
        state = .serving(session, goAwayLastStreamID: lastStreamID)
    }

    /// handshaking or serving → closing; false when already closing or closed.
    package mutating func beginClose() -> Bool {
        switch state {
        case .handshaking:
            state = .closing(hadSession: false)
            return true
        case .serving:
            state = .closing(hadSession: true)
            return true
        case .closing, .closed:
            return false
        }
    }

    /// → closed (the handler left the pipeline); returns whether a session
    /// had started.
    package mutating func remove() -> Bool {
        let hadSession: Bool
        switch state {
        case .handshaking: hadSession = false
        case .serving: hadSession = true
        case .closing(let had): hadSession = had
        case .closed:
            assertionFailure("a simulator connection was removed twice")
            return false
        }
        state = .closed
        return hadSession
    }
}
