import HeraldCore
import HeraldStorage
import PushProviders
import Synchronization

/// What Status reports beyond the process itself, refreshed in the
/// background so that Status stays a CPU-only call on the event loop.
struct OperatorSnapshot: Sendable {
    var counts: [MessageState: Int] = [:]
    var oldestDueLagMilliseconds: Int64 = 0
    var store: StoreHealth?
    /// Every provider's pools (``ProviderRegistry/poolReports()``).
    var pools: [ProviderPoolReport] = []
    /// When it was taken (Status reports its age).
    var takenAt = ContinuousClock.now
}

/// The latest snapshot, shared across threads.
final class OperatorSnapshotCell: Sendable {
    private let value = Mutex(OperatorSnapshot())

    var current: OperatorSnapshot { value.withLock { $0 } }

    func set(_ snapshot: OperatorSnapshot) { value.withLock { $0 = snapshot } }
}
