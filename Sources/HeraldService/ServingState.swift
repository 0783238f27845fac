import Synchronization

/// Whether the instance takes work: Health answers SERVING only in `.serving`,
/// and Status reports it.
public enum ServingState: Int, Sendable {
    case starting
    case serving
    case draining
}

/// The instance's serving state, shared by the health, status and shutdown
/// paths across event-loop threads.
public final class ServingStateCell: Sendable {
    private let raw: Atomic<Int>

    public init(_ initial: ServingState = .starting) {
        raw = Atomic(initial.rawValue)
    }

    public var current: ServingState {
        ServingState(rawValue: raw.load(ordering: .acquiring)) ?? .starting
    }

    public func set(_ state: ServingState) {
        raw.store(state.rawValue, ordering: .releasing)
    }
}
