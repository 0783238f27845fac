/// Messages waiting for their next action, ordered by due time: a binary
/// min-heap with lazy deletion (a removed or rescheduled id leaves a stale
/// heap entry that is skipped when it surfaces).
struct DueIndex {
    private struct Entry {
        var dueAt: Int64
        var id: String
        var version: UInt32
    }

    private var heap: [Entry] = []
    /// The live version of each id; absent ids are not scheduled.
    private var live: [String: UInt32] = [:]
    private var nextVersion: UInt32 = 0

    var count: Int { live.count }

    mutating func reserve(_ capacity: Int) {
        heap.reserveCapacity(capacity)
        live.reserveCapacity(capacity)
    }

    /// Schedules `id` at `dueAt`, replacing any earlier schedule of it.
    mutating func insert(id: String, dueAt: Int64) {
        nextVersion &+= 1
        live[id] = nextVersion
        heap.append(Entry(dueAt: dueAt, id: id, version: nextVersion))
        siftUp(heap.count - 1)
        // Stale entries are bounded: compact when they outnumber live ones.
        if heap.count > 1024 && heap.count > 2 * live.count { compact() }
    }

    mutating func remove(id: String) {
        live[id] = nil
    }

    /// The earliest live due time.
    mutating func peekDueAt() -> Int64? {
        dropStale()
        return heap.first?.dueAt
    }

    /// Removes and returns up to `limit` ids due at or before `now`, earliest first.
    mutating func popDue(now: Int64, limit: Int) -> [String] {
        var out: [String] = []
        while out.count < limit {
            dropStale()
            guard let top = heap.first, top.dueAt <= now else { break }
            popTop()
            live[top.id] = nil
            out.append(top.id)
        }
        return out
    }

    private mutating func dropStale() {
        while let top = heap.first, live[top.id] != top.version { popTop() }
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(0)
        }
    }

    private mutating func compact() {
        heap.removeAll { live[$0.id] != $0.version }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    private func less(_ a: Int, _ b: Int) -> Bool {
        heap[a].dueAt < heap[b].dueAt || (heap[a].dueAt == heap[b].dueAt && heap[a].id < heap[b].id)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard less(child, parent) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            var smallest = left
            if left + 1 < heap.count && less(left + 1, left) { smallest = left + 1 }
            guard less(smallest, parent) else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
