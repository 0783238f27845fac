import Foundation
import HeraldCore
@testable import HeraldPostgres
import Logging
import PostgresNIO
import Testing
@testable import HeraldStorage

/// What only a server database can get wrong: many connections (replicas)
/// racing on one row, connections dying, the server not there, replicas
/// migrating together. The shared semantics run in the other suites, on
/// both stores.
@Suite("PostgreSQL store: races, failures, migrations", .storeCaseLimit,
       .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct PostgresStoreTests {
    // MARK: Hostile first

    @Test func concurrentSchedulesOfOneKeyLeaveOneLiveMessage() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            // Two replicas (two pools) on one database, 40 Schedules of one key.
            let a = try await PostgresStore.open(configuration), b = try await PostgresStore.open(configuration)
            let messages = (0..<40).map { i in makeMessage(id: String(format: "m-%02d", i), key: "same", createdAt: now + Int64(i)) }
            let outcomes = try await withThrowingTaskGroup(of: ScheduleOutcome.self) { group in
                for (i, message) in messages.enumerated() {
                    let store = i % 2 == 0 ? a : b
                    group.addTask { try await store.schedule(message) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.count == 40)
            #expect(try await a.countsByState() == [.scheduled: 1, .superseded: 39])
            let live = try #require(try await b.message(bundleID: "com.example.app", idempotencyKey: "same"))
            #expect(live.state == .scheduled)
            // Each Schedule superseded at most one message, and every superseded one exactly once.
            let superseded = outcomes.compactMap { outcome -> String? in
                if case .scheduled(_, let id) = outcome { return id }
                return nil
            }
            #expect(superseded.count == 39 && Set(superseded).count == 39 && !superseded.contains(live.id))
            await closeInTime(a)
            await closeInTime(b)
        }
    }

    @Test func concurrentClaimsOfOneMessageHaveOneWinner() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            var first = configuration, second = configuration
            first.replicaID = "replica-a"
            second.replicaID = "replica-b"
            let a = try await PostgresStore.open(first), b = try await PostgresStore.open(second)
            let message = makeMessage()
            _ = try await a.schedule(message)
            let winners = try await withThrowingTaskGroup(of: StoredMessage?.self) { group in
                for i in 0..<24 {
                    let store = i % 2 == 0 ? a : b
                    group.addTask { try await store.claim(id: message.id, from: .scheduled, now: now + Int64(i)) }
                }
                return try await group.reduce(into: []) { $0.append($1) }.compactMap { $0 }
            }
            #expect(winners.count == 1)
            #expect(winners.first?.attempts == 1)
            let owner = try await Self.scalar(configuration, "SELECT owner || ' ' || (lease_until - sending_since)::text FROM messages")
            #expect(owner == "replica-a 30000" || owner == "replica-b 30000")
            await closeInTime(a)
            await closeInTime(b)
        }
    }

    @Test func batchClaimsOfTwoReplicasNeverOverlap() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let a = try await PostgresStore.open(configuration), b = try await PostgresStore.open(configuration)
            let messages = (0..<300).map { makeMessage(id: String(format: "m-%03d", $0), key: "k\($0)", dueAt: now + Int64($0 % 7)) }
            try await a.importMessages(messages)
            let claimed = try await withThrowingTaskGroup(of: [String].self) { group in
                for store in [a, b, a, b] {
                    group.addTask {
                        var ids: [String] = []
                        for _ in 0..<100 {  // bounded: 300 messages, batches of 7
                            let batch = try await store.claimDue(before: now + 10, limit: 7, now: now)
                            if batch.isEmpty { break }
                            ids += batch.map(\.id)
                        }
                        return ids
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(claimed.count == 300 && Set(claimed) == Set(messages.map(\.id)))
            #expect(try await a.due(before: .max, limit: 10).isEmpty)
            await closeInTime(a)
            await closeInTime(b)
        }
    }

    /// postgres-nio 1.33 can write a query to a connection the server
    /// already closed without ever completing it (vapor/postgres-nio#487):
    /// `ClosedConnectionWatch` ends the call when the connection closes
    /// (before it, this case never ended in 1 of 3 runs).
    @Test
    func aConnectionKilledMidTransactionFailsCleanlyAndThePoolRecovers() async throws {
        try await withStore(.postgres) { opened in
            let store = try #require(opened as? PostgresStore)
            let message = makeMessage()
            await #expect(throws: StoreError.self) {
                try await store.transaction { connection in
                    try await PostgresRows.insert(connection, message, logger: store.logger)
                    let pid = try await PostgresStore.first(connection, "SELECT pg_backend_pid()", logger: store.logger) {
                        try $0.decode(Int32.self)
                    }
                    try await PostgresTestDatabase.admin("SELECT pg_terminate_backend(\(try #require(pid)))")
                    _ = try await connection.query("SELECT 1", logger: store.logger)
                }
            }
            // Nothing of it was committed; the next writes get a new connection.
            #expect(try await store.message(id: message.id) == nil)
            #expect(try await store.schedule(message) == .scheduled(message, supersededID: nil))
            #expect(try await store.message(id: message.id) == message)
        }
    }

    /// The watch itself: work that would never end fails as soon as its
    /// connection closes; one close callback per connection, however many
    /// calls it served.
    @Test func workOnAConnectionThatClosesEndsWithAnError() async throws {
        let configuration = try PostgresTestDatabase.configuration()
        let connection = try await PostgresConnection.connect(
            configuration: try configuration.connectionConfiguration(), id: 7, logger: Logger(label: "test"))
        let watch = ClosedConnectionWatch()
        for i in 0..<100 {
            #expect(try await watch.run(connection) { _ in i } == i)
        }
        #expect(watch.watchedConnections == 1)
        let (started, startedSignal) = AsyncStream<Void>.makeStream()
        let call = Task {
            try await watch.run(connection) { _ in
                startedSignal.yield()
                let (never, _) = AsyncStream<Void>.makeStream()
                for await _ in never {}
                return 0
            }
        }
        var starts = started.makeAsyncIterator()
        _ = await starts.next()
        try await connection.close()
        await #expect(throws: StoreError.self) { try await call.value }
        #expect(watch.watchedConnections == 0)
    }

    @Test func theDatabaseDownAtStartIsAClearErrorWithoutThePassword() async throws {
        var configuration = try PostgresTestDatabase.configuration()
        configuration.port = try Self.closedPort()
        configuration.host = "127.0.0.1"
        configuration.password = "s3cret-pw"
        do {
            let store = try await PostgresStore.open(configuration)
            await closeInTime(store)
            Issue.record("opened a store on a closed port")
        } catch let error as StoreError {
            guard case .cannotOpen(let location, _) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(location == "postgres://\(configuration.username):***@127.0.0.1:\(configuration.port)/\(configuration.database)?sslmode=disable")
            #expect(!error.description.contains("s3cret-pw"))
        }
    }

    @Test func aNewerSchemaIsRefusedUnchanged() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let store = try await PostgresStore.open(configuration)
            await closeInTime(store)
            let schema = try #require(configuration.schema)
            try await PostgresTestDatabase.admin("INSERT INTO \(schema).herald_schema(version) VALUES (99)")
            await #expect(throws: StoreError.newerSchema(path: configuration.redactedURL, found: 99, supported: PostgresStore.schemaVersion)) {
                let store = try await PostgresStore.open(configuration)
                await closeInTime(store)
            }
            #expect(try await Self.scalar(configuration, "SELECT count(*)::text FROM herald_schema")
                    == "\(PostgresStore.schemaVersion + 1)")
        }
    }

    @Test func replicasStartingTogetherMigrateOnce() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let stores = try await withThrowingTaskGroup(of: PostgresStore.self) { group in
                for _ in 0..<4 { group.addTask { try await PostgresStore.open(configuration) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(stores.count == 4)
            #expect(try await Self.scalar(configuration, "SELECT string_agg(version::text, ',' ORDER BY version) FROM herald_schema")
                    == (1...PostgresStore.schemaVersion).map(String.init).joined(separator: ","))
            for store in stores { await closeInTime(store) }
        }
    }

    @Test func closingRightAfterOpeningEndsThePoolInTime() async throws {
        // close() right after open(): the pool's run() may not have begun yet.
        try await PostgresTestDatabase.withSchema { configuration in
            for _ in 0..<20 {
                let store = try await PostgresStore.open(configuration)
                await closeInTime(store)
            }
        }
    }

    @Test func aBoundedWaitGivesUpOnATaskThatDoesNotEnd() async {
        let endless = Task<Void, Never> { try? await Task.sleep(for: .seconds(3_600)) }
        #expect(await BoundedWait.value(of: endless, atMost: .milliseconds(50)) == false)
        endless.cancel()
        #expect(await BoundedWait.value(of: endless, atMost: .seconds(30)) == true)
    }

    @Test func aClosedStoreThrowsClosed() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let store = try await PostgresStore.open(configuration)
            await closeInTime(store)
            await #expect(throws: StoreError.closed) { try await store.message(id: "x") }
        }
    }

    // MARK: Crash mid-send, across a restart (a new pool on the same database)

    @Test func aRestartResolvesAPushCaughtMidSend() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let before = try await PostgresStore.open(configuration)
            let message = makeMessage()
            _ = try await before.schedule(message)
            let claimed = try #require(try await before.claim(id: message.id, from: .scheduled, now: now + 1))
            try await before.recordHandOvers([
                HandOverMark(messageID: message.id, deviceToken: "handed", push: claimed.pushStartedAt!, at: now + 2),
                HandOverMark(messageID: message.id, deviceToken: "answered", push: claimed.pushStartedAt!, at: now + 2),
            ])
            try await before.recordOutcome(DeviceOutcome(messageID: message.id, deviceToken: "answered", kind: .sent, at: now + 3))
            await closeInTime(before)  // "kill -9": no transition

            let after = try await PostgresStore.open(configuration)
            let recovery = try await after.recoverInterrupted(now: now + 10)
            #expect(recovery == InterruptedRecovery(resumed: [message.id], unconfirmedDevices: 1))
            let outcomes = try await after.outcomes(messageID: message.id)
            #expect(outcomes.map(\.deviceToken) == ["answered", "handed"])
            #expect(outcomes.last?.kind == .unconfirmed)
            let resumed = try #require(try await after.message(id: message.id))
            #expect(resumed.state == .scheduled && !resumed.isSending && resumed.keySpent)
            #expect(try await Self.scalar(configuration, "SELECT coalesce(owner, 'none') FROM messages") == "none")
            await closeInTime(after)
        }
    }

    // MARK: Status and retention

    @Test func statusEstimatesFinishedStatesOnLargeTables() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            var estimating = configuration
            estimating.exactCountRows = 0
            let store = try await PostgresStore.open(estimating)
            try await store.importMessages((0..<400).map { i in
                makeMessage(id: "m\(i)", key: "k\(i)", state: i % 4 == 0 ? .scheduled : (i % 4 == 1 ? .sent : .failed))
            })
            try await PostgresTestDatabase.admin("ANALYZE \(try #require(configuration.schema)).messages")
            // The statistics sampled the whole (small) table: the estimates are exact here.
            #expect(try await store.countsByState() == [.scheduled: 100, .sent: 100, .failed: 200])
            await closeInTime(store)
        }
    }

    @Test func retentionDeletesInBatchesWithOutcomesAndKeys() async throws {
        try await withStore(.postgres) { store in
            let old = now - 40 * 86_400_000
            var messages: [StoredMessage] = []
            for i in 0..<25 {
                var message = makeMessage(id: String(format: "old-%02d", i), key: "k\(i)", state: .sent, createdAt: old)
                message.updatedAt = old + Int64(i)
                messages.append(message)
            }
            messages.append(makeMessage(id: "waiting", key: "waiting", state: .scheduled, createdAt: old))
            try await store.importMessages(messages)
            for i in 0..<25 {
                try await store.recordOutcome(DeviceOutcome(messageID: String(format: "old-%02d", i), deviceToken: "t", kind: .sent, at: old))
            }
            #expect(try await store.pruneFinished(before: now, limit: 10) == PruneBatch(messages: 10, outcomes: 10))
            #expect(try await store.message(id: "old-00") == nil)
            #expect(try await store.message(id: "old-10") != nil)
            #expect(try await store.pruneFinished(before: now, limit: 10).messages == 10)
            #expect(try await store.pruneFinished(before: now, limit: 10).messages == 5)
            #expect(try await store.pruneFinished(before: now, limit: 10).messages == 0)
            #expect(try await store.countsByState() == [.scheduled: 1])
            // The key is free again.
            #expect(try await store.schedule(makeMessage(key: "k3")).replaced == false)
        }
    }

    // MARK: Helpers

    /// The first column of the first row, as text, in the configuration's schema.
    static func scalar(_ configuration: PostgresStoreConfiguration, _ sql: String) async throws -> String? {
        let connection = try await PostgresConnection.connect(
            configuration: try configuration.connectionConfiguration(), id: 2, logger: Logger(label: "test"))
        var result: String?
        do {
            for try await value in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Logger(label: "test"))
                .decode(String?.self) where result == nil {
                result = value
            }
        } catch {
            try? await connection.close()
            throw error
        }
        try? await connection.close()
        return result
    }

    /// A loopback port nothing listens on (bound, then closed).
    static func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw StoreError.database("socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw StoreError.database("bind failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

@Suite("PostgreSQL URLs")
struct PostgresURLTests {
    @Test func parsesTCPSocketAndTLSForms() throws {
        let tcp = try PostgresStoreConfiguration(url: "postgres://herald:p%40ss@db.example:6543/herald_db?sslmode=verify-full", replicaID: "r")
        #expect(tcp.username == "herald" && tcp.password == "p@ss" && tcp.host == "db.example" && tcp.port == 6543)
        #expect(tcp.database == "herald_db" && tcp.tls == .verifyFull && tcp.unixSocketPath == nil)
        #expect(tcp.redactedURL == "postgres://herald:***@db.example:6543/herald_db?sslmode=verify-full")
        let socket = try PostgresStoreConfiguration(url: "postgresql://herald@localhost/h?host=/run/pg", replicaID: "r")
        #expect(socket.unixSocketPath == "/run/pg/.s.PGSQL.5432" && socket.password == nil && socket.tls == .disable)
        let v6 = try PostgresStoreConfiguration(url: "postgres://u@[::1]:5433/d?sslmode=require", replicaID: "r")
        #expect(v6.host == "::1" && v6.port == 5433 && v6.tls == .require)
    }

    @Test(arguments: [
        "mysql://u@h/d", "postgres://h:5432/d", "postgres://u@h:5432", "postgres://u@h:5432/", "postgres://u@h:0/d",
        "postgres://u@h:99999/d", "postgres://u@h:x/d", "postgres://u@h/d?sslmode=prefer", "postgres://u@h/d?host=relative",
        "postgres://u@h/d?user=x", "postgres://u@h/d?sslmode=require&sslmode=disable", "postgres://u:%zz@h/d",
        "postgres://u@h/d?host=/s&sslmode=require", "postgres://u@h/a/b",
    ])
    func refusesWhatLibpqWouldReadDifferentlyOrNotAtAll(_ url: String) {
        #expect(throws: PostgresURLError.self) { try PostgresStoreConfiguration(url: url, replicaID: "r") }
    }

    @Test func errorsNeverHoldThePassword() {
        do {
            _ = try PostgresStoreConfiguration(url: "postgres://u:hunter2@h:99999/d", replicaID: "r")
        } catch {
            #expect(!error.description.contains("hunter2"))
        }
    }
}
