public import Logging
public import NIOCore
import NIOPosix
public import TLSTransport

/// What operators see of a pool, every slot summed.
package struct HTTP2PoolStatus: Sendable, Equatable {
    /// Connections established (ready or draining).
    package var open = 0
    /// Streams waiting for a response.
    package var inFlight = 0
    /// Requests queued locally beyond the streams allowed.
    package var queued = 0
    /// The last connection-level error, if any.
    package var lastError: String?
    /// Reconnect delays waited so far, every slot.
    package var reconnectDelays: [Duration] = []
}

/// The non-generic body of an ``HTTP2ClientPool``: its slots, each on an
/// event loop of the group, and the state they share (settings, the erased
/// adapter, TLS, logger).
@usableFromInline
package final class HTTP2PoolCore: Sendable {
    private let slots: [HTTP2ClientSlot]

    @usableFromInline
    package init(settings: HTTP2PoolSettings, adapter: HTTP2ErasedAdapter, tls: TLSContext, group: (any EventLoopGroup)?, logger: Logger) {
        let shared = HTTP2PoolShared(settings: settings, adapter: adapter, tls: tls, logger: logger)
        let group = group ?? MultiThreadedEventLoopGroup.singleton
        slots = (0..<max(1, settings.maxConnections)).map { HTTP2ClientSlot(index: $0, eventLoop: group.next(), shared: shared) }
    }

    /// The least-loaded slot, its load counted up by one request until
    /// ``HTTP2ClientSlot/release()``.
    @usableFromInline
    package func reserveSlot() -> HTTP2ClientSlot {
        var best = slots[0]
        var bestLoad = best.load.load(ordering: .relaxed)
        for slot in slots.dropFirst() {
            let load = slot.load.load(ordering: .relaxed)
            if load < bestLoad {
                best = slot
                bestLoad = load
            }
        }
        best.load.add(1, ordering: .relaxed)
        return best
    }

    func status() async -> HTTP2PoolStatus {
        var status = HTTP2PoolStatus()
        for slot in slots {
            guard let snapshot = try? await slot.eventLoop.submit({ slot.snapshot() }).get() else { continue }
            status.open += snapshot.open
            status.inFlight += snapshot.inFlight
            status.queued += snapshot.queued
            status.reconnectDelays += snapshot.reconnectDelays
            if let error = snapshot.lastError { status.lastError = error }
        }
        return status
    }

    func shutdown() async {
        for slot in slots {
            try? await slot.eventLoop.submit { slot.shutdown() }.get()
        }
    }
}
