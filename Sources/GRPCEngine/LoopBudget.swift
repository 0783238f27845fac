import Synchronization

/// One event loop's share of a ``SharedBudget`` (the request buffers'
/// bytes): the loop takes bytes from the server-wide total a chunk at a
/// time and serves its calls from what it holds, so a small request (a
/// Health/Check's 5 bytes) reserves and releases without writing the total,
/// the cache line every loop would otherwise write twice per request
/// (issue 30).
///
/// Confined to its loop: only that thread calls ``reserve(_:)`` and
/// ``release(_:)``; what it holds idle is written by it alone (a plain store) and read by
/// anyone (the total's `used` subtracts it, so figures stay exact at rest).
/// A loop holds at most two chunks idle: all loops together at most 1/16 of
/// the limit, which a call may find taken by other loops' idle shares
/// (refused slightly early, never late: the total never passes the limit).
/// With `chunk` 0 every reservation goes to the total, exactly as before.
final class LoopBudget: @unchecked Sendable {
    // @unchecked: `held` is an atomic written by one thread; the rest is immutable.
    private let shared: SharedBudget
    private let chunk: Int
    private let held = Atomic<Int>(0)

    init(shared: SharedBudget, chunk: Int) {
        self.shared = shared
        self.chunk = chunk
    }

    /// Taken from the total and not used by a call now.
    var idle: Int { held.load(ordering: .relaxed) }

    /// Takes `amount` (from what the loop holds, else from the total with a
    /// chunk more to hold); false, and nothing taken, when the total cannot give it.
    @inline(__always)
    func reserve(_ amount: Int) -> Bool {
        guard amount > 0 else { return true }
        let holding = held.load(ordering: .relaxed)
        if amount <= holding {
            held.store(holding - amount, ordering: .relaxed)
            return true
        }
        let needed = amount - holding
        if chunk > 0, shared.reserve(needed + chunk) {
            held.store(chunk, ordering: .relaxed)
            return true
        }
        if shared.reserve(needed) {
            held.store(0, ordering: .relaxed)
            return true
        }
        return false
    }

    /// Gives `amount` back: kept up to two chunks, the rest to the total.
    @inline(__always)
    func release(_ amount: Int) {
        guard amount > 0 else { return }
        let holding = held.load(ordering: .relaxed) + amount
        if holding > 2 * chunk {
            shared.release(holding - chunk)
            held.store(chunk, ordering: .relaxed)
        } else {
            held.store(holding, ordering: .relaxed)
        }
    }
}
