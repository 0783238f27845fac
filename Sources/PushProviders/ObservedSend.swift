package import Logging

/// How one provider request ended, as the gateway books it: the delivery
/// metrics' outcome label, and whether (and what) its pool's error book
/// records.
package struct ProviderSendVerdict: Sendable {
    /// The `outcome` label of the delivery metrics (never a token).
    package var outcome: String
    /// Whether the error book hears of it (a success, or a refusal about the pool).
    package var booked: Bool
    /// The error kept as the pool's last one (nil: a success, which ends a streak).
    package var error: String?
    /// A refusal of the credentials, counted by reason.
    package var authReason: String?

    package init(outcome: String, booked: Bool, error: String? = nil, authReason: String? = nil) {
        self.outcome = outcome
        self.booked = booked
        self.error = error
        self.authReason = authReason
    }
}

extension ProviderErrorBook {
    /// One send through a provider's `client`, observed alike for every
    /// provider: held in flight for the client's retirement, timed into the
    /// delivery metrics by outcome, and booked in the pool's error entry
    /// when `answered` (or `failed`, for a thrown error) says so.
    package func observedSend<Client: AnyObject & Sendable, Response>(
        through client: Client, retirement: ClientRetirement<Client>, route: () -> String,
        service: (metrics: String, log: String), observation: (metrics: any DeliveryMetrics, logger: Logger)?,
        _ send: () async throws -> Response,
        answered: (Response) -> ProviderSendVerdict, failed: (any Error) -> ProviderSendVerdict
    ) async throws -> Response {
        let began = ContinuousClock.now
        let logger = observation?.logger ?? Logger(label: "herald")
        retirement.begin(client)
        defer { retirement.end(client) }
        let verdict: ProviderSendVerdict
        let result: Result<Response, any Error>
        do {
            let response = try await send()
            verdict = answered(response)
            result = .success(response)
        } catch {
            verdict = failed(error)
            result = .failure(error)
        }
        observation?.metrics.delivery(service: service.metrics, outcome: verdict.outcome, duration: ContinuousClock.now - began)
        if verdict.booked {
            record(pool: ObjectIdentifier(client), route: route(), error: verdict.error, authReason: verdict.authReason,
                   service: service.log, logger: logger)
        }
        return try result.get()
    }
}
