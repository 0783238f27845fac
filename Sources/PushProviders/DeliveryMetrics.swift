/// Where a provider's gateway counts its sends (the service's metrics):
/// labels are the provider (`apns`, `fcm`) and a neutral outcome, never a
/// token.
public protocol DeliveryMetrics: Sendable {
    /// One request answered (or given up on) after `duration`.
    func delivery(service: String, outcome: String, duration: Duration)
}
