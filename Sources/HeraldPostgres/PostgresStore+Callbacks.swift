import HeraldCore
public import HeraldStorage

/// Schedule without a Task per call: the write and the device read join
/// their batches (`PostgresBatcher.submit`) and answer through callbacks.
extension PostgresStore {  // CallbackScheduling (through ServableStore)
    public func schedule(
        _ message: StoredMessage, deadline: ContinuousClock.Instant?,
        completion: @escaping @Sendable (Result<ScheduleOutcome, any Error>) -> Void
    ) -> @Sendable () -> Void {
        let call = scheduleWrites.submit(message, deadline: deadline, writer: ScheduleWrites(store: self), completion: completion)
        return { call.cancel() }
    }

    public func devices(of message: StoredMessage, _ body: @escaping @Sendable (@escaping @Sendable () -> [Device]) -> Void) {
        let owner = DeviceOwner(bundleID: message.bundleID, platform: message.platform.rawValue, userID: message.userID)
        _ = deviceReads.submit(owner, deadline: nil, writer: DeviceReads(store: self)) { result in
            let devices = (try? result.get()) ?? []
            body { devices }
        }
    }
}
