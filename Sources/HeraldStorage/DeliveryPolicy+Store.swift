public import HeraldCore

// The store's records as the delivery policy reads them.

extension Device: DeliveryDevice {}

extension DeviceOutcome: DeliveryRecord {}

extension StoredMessage {
    /// What the delivery policy reads of this message.
    public var deliveryFacts: DeliveryFacts {
        DeliveryFacts(state: state, method: deliveryMethod, platform: platform, windowEnd: windowEnd, dueAt: dueAt)
    }
}
