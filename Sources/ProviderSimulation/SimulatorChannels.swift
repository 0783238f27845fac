package import NIOCore
import Synchronization

/// The connections a simulator accepted: ids in accept order and the open
/// channels, closed together at shutdown.
package final class SimulatorChannels: Sendable {
    private let connectionIDs = Atomic<Int>(0)
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])

    package init() {}

    /// The next connection's id (1, 2, …).
    package func nextConnectionID() -> Int { connectionIDs.add(1, ordering: .relaxed).newValue }

    /// Connections accepted so far.
    package var accepted: Int { connectionIDs.load(ordering: .relaxed) }

    /// Keeps `channel` until it closes.
    package func track(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        channels.withLock { $0[key] = channel }
        channel.closeFuture.whenComplete { [self] _ in
            _ = channels.withLock { $0.removeValue(forKey: key) }
        }
    }

    /// The channels open now.
    package var open: [any Channel] { channels.withLock { Array($0.values) } }

    /// How many are open now.
    package var openCount: Int { channels.withLock { $0.count } }

    /// Closes every open channel.
    package func closeAll() async {
        for channel in open {
            try? await channel.close()
        }
    }
}
