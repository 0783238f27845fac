import HeraldPrimitives
import NIOCore
import Synchronization

/// The access token of one service account: fetched on first use, cached,
/// refreshed in the background `refreshMargin` before it expires (at half
/// its lifetime when that comes sooner), one fetch in flight at a time
/// (concurrent callers wait for it), dropped when FCM refuses it.
actor FCMAccessTokens {
    struct Token: Sendable {
        let value: String
        /// `authorization`'s value, made once per token rather than per request.
        let authorization: String
        let expiresAt: Timestamp
        let refreshAt: Timestamp

        init(value: String, expiresAt: Timestamp, refreshAt: Timestamp) {
            self.value = value
            self.authorization = "Bearer " + value
            self.expiresAt = expiresAt
            self.refreshAt = refreshAt
        }
    }

    typealias Fetch = @Sendable () async -> Result<(token: String, expiresIn: Int64), FCMTokenFailure>

    private let clock: any FCMClock
    private let refreshMargin: Double
    private let timerLoop: any EventLoop
    private let fetch: Fetch
    private var current: Token?
    private var inFlight: Task<Result<Token, FCMTokenFailure>, Never>?
    private var refreshTimer: FCMTimer?
    /// After a failed background refresh, none before this (the cached token is still good).
    private var quietUntil: Timestamp?
    private var isShutdown = false
    nonisolated let minted = Atomic<Int>(0)
    nonisolated let lastError = Mutex<String?>(nil)

    init(clock: any FCMClock, refreshMargin: Duration, timerLoop: any EventLoop, fetch: @escaping Fetch) {
        self.clock = clock
        self.refreshMargin = refreshMargin.timeInterval
        self.timerLoop = timerLoop
        self.fetch = fetch
    }

    /// A token good for now; waits for a fetch when there is none, but not
    /// past `deadline` (the caller's request's): nil when it came first.
    /// The fetch itself goes on (bounded by its own timeout) for later callers.
    func token(waitingUntil deadline: Timestamp? = nil) async throws(FCMTokenFailure) -> String? {
        try await credential(waitingUntil: deadline)?.value
    }

    /// ``token(waitingUntil:)`` with its `authorization` header value.
    func credential(waitingUntil deadline: Timestamp? = nil) async throws(FCMTokenFailure) -> Token? {
        let now = clock.now()
        if let current, now < current.expiresAt {
            if now >= current.refreshAt, quietUntil.map({ now >= $0 }) ?? true { _ = startFetch() }
            return current
        }
        let fetch = startFetch()
        let result: Result<Token, FCMTokenFailure>?
        if let deadline {
            if now >= deadline { return nil }
            result = await Self.wait(for: fetch, until: deadline, clock: clock, timerLoop: timerLoop)
        } else {
            result = await fetch.value
        }
        switch result {
        case .success(let token): return token
        case .failure(let failure): throw failure
        case nil: return nil
        }
    }

    /// The fetch's result, or nil once `clock` reads `deadline` (whichever comes first).
    private static func wait(
        for fetch: Task<Result<Token, FCMTokenFailure>, Never>, until deadline: Timestamp, clock: any FCMClock,
        timerLoop: any EventLoop
    ) async -> Result<Token, FCMTokenFailure>? {
        let waiter = OneShot<Result<Token, FCMTokenFailure>?>()
        return await withCheckedContinuation { continuation in
            waiter.arm(continuation)
            let timer = clock.scheduleTimer(at: deadline, on: timerLoop) { waiter.resume(returning: nil) }
            Task {
                let result = await fetch.value
                timer.cancel()
                waiter.resume(returning: result)
            }
        }
    }

    /// FCM refused `value` (401): forget it, so the next caller fetches a new one.
    func invalidate(_ value: String) {
        if current?.value == value { current = nil }
    }

    /// Returns once the fetch in flight, if any, has finished.
    func settled() async {
        _ = await inFlight?.value
    }

    func shutdown() {
        isShutdown = true
        refreshTimer?.cancel()
        refreshTimer = nil
    }

    private func startFetch() -> Task<Result<Token, FCMTokenFailure>, Never> {
        if let inFlight { return inFlight }
        let task = Task { await self.runFetch() }
        inFlight = task
        return task
    }

    private func runFetch() async -> Result<Token, FCMTokenFailure> {
        let started = clock.now()
        let result = await fetch()
        inFlight = nil
        switch result {
        case .success(let answer):
            let lifetime = Double(answer.expiresIn)
            let lead = min(refreshMargin, lifetime / 2)
            let token = Token(
                value: answer.token, expiresAt: started.addingTimeInterval(lifetime - min(10, lifetime / 10)),
                refreshAt: started.addingTimeInterval(lifetime - lead))
            current = token
            quietUntil = nil
            minted.add(1, ordering: .relaxed)
            armRefresh(at: token.refreshAt)
            return .success(token)
        case .failure(let failure):
            lastError.withLock { $0 = failure.description }
            // Keep a still-valid token; try again a little later, not on every send.
            let now = clock.now()
            if let current, now < current.expiresAt {
                quietUntil = now.addingTimeInterval(min(30, max(current.expiresAt.timeIntervalSince(now) / 4, 1)))
                armRefresh(at: quietUntil!)
            }
            return .failure(failure)
        }
    }

    private func armRefresh(at moment: Timestamp) {
        guard !isShutdown else { return }
        refreshTimer?.cancel()
        refreshTimer = clock.scheduleTimer(at: moment, on: timerLoop) { [weak self] in
            guard let self else { return }
            Task { await self.backgroundRefresh() }
        }
    }

    private func backgroundRefresh() {
        refreshTimer = nil
        guard !isShutdown, let current else { return }
        let now = clock.now()
        if now >= current.refreshAt, quietUntil.map({ now >= $0 }) ?? true { _ = startFetch() }
    }
}

/// A continuation resumed by whichever of several racers comes first; later ones are ignored.
private final class OneShot<Value: Sendable>: Sendable {
    private let continuation = Mutex<CheckedContinuation<Value, Never>?>(nil)

    func arm(_ continuation: CheckedContinuation<Value, Never>) {
        self.continuation.withLock { $0 = continuation }
    }

    func resume(returning value: Value) {
        continuation.withLock { $0.take() }?.resume(returning: value)
    }
}
