public import APNs
public import HeraldCore

extension DeviceOutcomeKind {
    /// The one mapping from an APNs refusal (a non-200 answer) to an outcome
    /// kind: every refusal the dispatcher records or acts on goes through
    /// here. 410 counts as Unregistered whatever the body says (APNs' rule:
    /// the token is no longer active); an unknown reason is `rejected`, with
    /// the reason kept in the outcome.
    public init(refusal response: APNsResponse) {
        if response.reason == .unregistered || response.status == 410 {
            self = .unregistered
        } else if response.reason == .badDeviceToken {
            self = .badDeviceToken
        } else {
            self = .rejected
        }
    }
}
