import NIOConcurrencyHelpers

/// Read connections, checked out one per read. WAL lets them read committed
/// data while the writer commits; a read started after a write's `await`
/// returned sees that write.
// @unchecked Sendable: `idle` and `closed` are guarded by `lock`; a
// connection (not Sendable) is used by one reader at a time.
final class ReaderPool: @unchecked Sendable {
    private let lock = NIOLock()
    private var idle: [Database] = []
    private var closed = false
    private let path: String
    private let busyTimeoutMs: Int32
    private let maxIdle: Int

    init(path: String, busyTimeoutMs: Int32, maxIdle: Int = 4) {
        self.path = path
        self.busyTimeoutMs = busyTimeoutMs
        self.maxIdle = maxIdle
    }

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        let db = try checkOut()
        defer {
            db.resetBusyStatements()
            checkIn(db)
        }
        return try body(db)
    }

    func close() {
        lock.lock()
        closed = true
        let connections = idle
        idle = []
        lock.unlock()
        connections.forEach { $0.close() }
    }

    private func checkOut() throws -> Database {
        lock.lock()
        if closed {
            lock.unlock()
            throw StoreError.closed
        }
        if let db = idle.popLast() {
            lock.unlock()
            return db
        }
        lock.unlock()
        let db = try Database(path: path, create: false, busyTimeoutMs: busyTimeoutMs)
        try db.execute("PRAGMA query_only = 1")
        return db
    }

    private func checkIn(_ db: Database) {
        lock.lock()
        if !closed && idle.count < maxIdle {
            idle.append(db)
            lock.unlock()
        } else {
            lock.unlock()
            db.close()
        }
    }
}
