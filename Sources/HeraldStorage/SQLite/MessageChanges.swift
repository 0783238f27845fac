import CInterop

/// What schema v17 moved out of triggers (`SchemaV17`): the writer's own
/// upkeep of `state_counts`, `campaign_funnel`, the state events and the
/// `funnel` column, from the row changes of `messages` that SQLite's
/// pre-update hook reports (CInterop's sqlite_changes.c).
///
/// After each statement (`Database` calls `apply`) the kept changes are read:
/// a state change appends its event (as `events_message_state` did, in the
/// statement's row order, before the next statement), a stale `funnel` is
/// set by rowid (as `messages_funnel_update` did; that UPDATE is itself a
/// change, read in the same call), and the count changes are summed. Before
/// each commit (`Database.beforeCommit`) the sums are written, one upsert
/// per state and per campaign key. A savepoint rolled back restores the
/// sums as they were when it began; a rollback drops them.
///
/// INSERTs are not read: the store's inserts count themselves
/// (`MessageInsertBatch`, `MessageRows.count`) since schema v6.
final class MessageChanges {
    /// The columns kept, in this order (`column`).
    enum Column: Int, CaseIterable {
        case id, bundleID, platform, userID, campaignID, idempotencyKey, deliveryMethod, abTest, state, updatedAt, funnel
        case deferredAt, handedOffAt, sentAt, displayedAt, openedAt

        var name: String {
            switch self {
            case .id: "id"
            case .bundleID: "bundle_id"
            case .platform: "platform"
            case .userID: "user_id"
            case .campaignID: "campaign_id"
            case .idempotencyKey: "idempotency_key"
            case .deliveryMethod: "delivery_method"
            case .abTest: "ab_test"
            case .state: "state"
            case .updatedAt: "updated_at"
            case .funnel: "funnel"
            case .deferredAt: "deferred_at"
            case .handedOffAt: "handed_off_at"
            case .sentAt: "sent_at"
            case .displayedAt: "displayed_at"
            case .openedAt: "opened_at"
            }
        }

        /// An UPDATE that changes none of these is not kept (a claim, a
        /// release, an attempt count…).
        var isWatched: Bool {
            switch self {
            case .bundleID, .campaignID, .deliveryMethod, .abTest, .state, .funnel, .deferredAt, .handedOffAt, .sentAt,
                .displayedAt, .openedAt:
                true
            case .id, .platform, .userID, .idempotencyKey, .updatedAt:
                false
            }
        }
    }

    /// A `campaign_funnel` row's key.
    struct CampaignKey: Hashable {
        var bundleID: String
        var campaignID: String
        var deliveryMethod: String
        var abTest: Int64
        var funnel: Int64
        var policy: Int64
    }

    /// The sums not yet written: per state, and per campaign key (in the
    /// order first met, found by `campaignIndex`).
    struct Sums {
        var states: [String: Int] = [:]
        var campaignKeys: [CampaignKey] = []
        var campaignCounts: [Int] = []
        var campaignIndex: [CampaignKey: Int] = [:]

        var isEmpty: Bool { states.isEmpty && campaignKeys.isEmpty }
    }

    private let handle: OpaquePointer
    private let changes: OpaquePointer
    private(set) var sums = Sums()
    /// The campaign keys last counted (a push's end moves one message from
    /// one key to another, as the push before it did): found without
    /// making Strings or hashing.
    private var recent: [Int] = []
    /// True while `apply` runs (its own statements are read by its loop).
    private(set) var isApplying = false

    /// Starts keeping `messages`' changes on `db` (after the migrations).
    init(on db: Database) throws {
        var numbers: [String: Int32] = [:]
        let info = try db.prepare("PRAGMA table_info(messages)")
        while try info.step() { numbers[info.string(1)] = Int32(info.int64(0)) }
        var columns: [Int32] = []
        var watched: UInt64 = 0
        for column in Column.allCases {
            guard let number = numbers[column.name] else {
                throw StoreError.sqlite(SQLiteError(extendedCode: SQLITE_ERROR, message: "messages has no column \(column.name)", sql: nil))
            }
            columns.append(number)
            if column.isWatched { watched |= 1 << UInt64(column.rawValue) }
        }
        guard let changes = columns.withUnsafeBufferPointer({
            cinterop_row_changes_install(db.handle, "messages", $0.baseAddress, Int32($0.count), watched)
        }) else {
            throw StoreError.sqlite(SQLiteError(extendedCode: SQLITE_NOMEM, message: "cannot keep row changes", sql: nil))
        }
        self.handle = db.handle
        self.changes = changes
    }

    deinit { cinterop_row_changes_remove(changes, handle) }

    /// Whether changes wait to be read (or one could not be kept).
    var isPending: Bool { cinterop_row_changes_count(changes) != 0 }

    /// Reads the kept changes: appends the state events, fixes stale
    /// funnels, sums the counts. Throws when a change could not be kept
    /// (out of memory): the caller's transaction must not commit.
    func apply(_ db: Database) throws {
        guard !isApplying else { return }  // the fix-ups' own changes: read by the loop below
        isApplying = true
        defer { isApplying = false }
        while true {
            let count = cinterop_row_changes_count(changes)
            if count < 0 {
                cinterop_row_changes_clear(changes)
                throw StoreError.sqlite(SQLiteError(extendedCode: SQLITE_NOMEM, message: "a row change could not be kept", sql: nil))
            }
            guard count > 0 else { return }
            var fixes: [(rowid: Int64, funnel: Int64)] = []
            for index in 0..<count {
                let before = Side(changes, index, after: false)
                if cinterop_row_changes_op(changes, index) == SQLITE_DELETE {
                    addState(-1, before)
                    addCampaign(-1, before)
                    continue
                }
                let after = Side(changes, index, after: true)
                if !before.same(.state, as: after) {
                    addState(-1, before)
                    addState(1, after)
                    // The kept texts stay valid until the clear below (an
                    // event's INSERT keeps nothing).
                    try db.run(Self.insertEvent) { statement in
                        for (column, parameter) in [(Column.bundleID, 1), (.state, 3), (.id, 4), (.idempotencyKey, 5), (.userID, 6),
                                                    (.campaignID, 7), (.platform, 8)] as [(Column, Int32)] {
                            try statement.bind(text: after.value(column), at: parameter)
                        }
                        try statement.bind(after.integer(.updatedAt), at: 2)
                    }
                }
                let funnel = after.expectedFunnel
                if after.integer(.funnel) != funnel { fixes.append((cinterop_row_changes_rowid(changes, index), funnel)) }
                if !before.sameCampaignKey(as: after) {
                    addCampaign(-1, before)
                    addCampaign(1, after)
                }
            }
            cinterop_row_changes_clear(changes)
            for fix in fixes {
                try db.run(Self.fixFunnel) { statement in
                    try statement.bind(fix.rowid, at: 1)
                    try statement.bind(fix.funnel, at: 2)
                }
            }
        }
    }

    /// Writes the summed counts (after reading what is still kept).
    func write(_ db: Database) throws {
        try apply(db)
        guard !sums.isEmpty else { return }
        let sums = self.sums
        self.sums = Sums()
        recent = []
        for (state, n) in sums.states where n != 0 {
            try db.run(Self.countState) { statement in
                try statement.bind(state, at: 1)
                try statement.bind(n, at: 2)
            }
        }
        for (key, n) in zip(sums.campaignKeys, sums.campaignCounts) where n != 0 {
            try db.run(Self.countCampaign) { statement in
                try statement.bind(key.bundleID, at: 1)
                try statement.bind(key.campaignID, at: 2)
                try statement.bind(key.deliveryMethod, at: 3)
                try statement.bind(key.abTest, at: 4)
                try statement.bind(key.funnel, at: 5)
                try statement.bind(key.policy, at: 6)
                try statement.bind(n, at: 7)
            }
        }
    }

    /// The sums now, for a savepoint to restore (`restore`).
    var mark: Sums { sums }

    /// Back to `mark`, dropping what was kept since (a savepoint rolled back).
    func restore(_ mark: Sums) {
        cinterop_row_changes_clear(changes)
        sums = mark
        recent = []
    }

    /// Drops everything (the transaction rolled back).
    func discard() { restore(Sums()) }

    private func addState(_ n: Int, _ side: Side) {
        sums.states[side.string(.state), default: 0] += n
    }

    private func addCampaign(_ n: Int, _ side: Side) {
        if let hit = recent.first(where: { side.isCampaignKey(sums.campaignKeys[$0]) }) {
            sums.campaignCounts[hit] += n
            return
        }
        let key = side.campaignKey
        let index: Int
        if let known = sums.campaignIndex[key] {
            index = known
            sums.campaignCounts[index] += n
        } else {
            index = sums.campaignKeys.count
            sums.campaignKeys.append(key)
            sums.campaignCounts.append(n)
            sums.campaignIndex[key] = index
        }
        recent.insert(index, at: 0)
        if recent.count > 4 { recent.removeLast() }
    }

    static let insertEvent = HotSQL("""
        INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
        """)
    static let fixFunnel = HotSQL("UPDATE messages SET funnel = ?2 WHERE rowid = ?1")
    static let countState = HotSQL(MessageRows.countStateSQL)
    static let countCampaign = HotSQL(MessageRows.countCampaignSQL)

    /// One side (before or after) of a kept change, read in place.
    private struct Side {
        let changes: OpaquePointer
        let index: Int32
        let after: Int32

        init(_ changes: OpaquePointer, _ index: Int32, after: Bool) {
            self.changes = changes
            self.index = index
            self.after = after ? 1 : 0
        }

        func value(_ column: Column) -> cinterop_row_value {
            cinterop_row_changes_value(changes, index, after, Int32(column.rawValue))
        }

        /// The text's bytes (empty unless TEXT).
        func bytes(_ column: Column) -> UnsafeBufferPointer<UInt8> {
            let v = value(column)
            guard v.type == SQLITE_TEXT, let text = v.text else { return UnsafeBufferPointer(start: nil, count: 0) }
            return UnsafeBufferPointer(start: text, count: Int(v.length))
        }

        func string(_ column: Column) -> String { String(decoding: bytes(column), as: UTF8.self) }
        func integer(_ column: Column) -> Int64 { value(column).integer }
        func present(_ column: Column) -> Bool { value(column).type != SQLITE_NULL }

        /// Whether `column` holds the same value on both sides.
        func same(_ column: Column, as other: Side) -> Bool {
            let a = value(column), b = other.value(column)
            guard a.type == b.type else { return false }
            if a.type != SQLITE_TEXT { return a.integer == b.integer }
            return bytes(column).elementsEqual(other.bytes(column))
        }

        func sameCampaignKey(as other: Side) -> Bool {
            same(.bundleID, as: other) && same(.campaignID, as: other) && same(.deliveryMethod, as: other)
                && integer(.abTest) == other.integer(.abTest) && integer(.funnel) == other.integer(.funnel) && policy == other.policy
        }

        /// Whether this side's campaign key is `key`, compared byte by byte.
        func isCampaignKey(_ key: CampaignKey) -> Bool {
            func equal(_ string: String, _ column: Column) -> Bool {
                var string = string
                return string.withUTF8 { $0.elementsEqual(bytes(column)) }
            }
            return key.abTest == integer(.abTest) && key.funnel == integer(.funnel) && key.policy == policy
                && equal(key.bundleID, .bundleID) && equal(key.campaignID, .campaignID) && equal(key.deliveryMethod, .deliveryMethod)
        }

        var campaignKey: CampaignKey {
            CampaignKey(bundleID: string(.bundleID), campaignID: string(.campaignID), deliveryMethod: string(.deliveryMethod),
                        abTest: integer(.abTest), funnel: integer(.funnel), policy: policy)
        }

        private func isState(_ name: StaticString) -> Bool {
            let state = bytes(.state)
            return state.count == name.utf8CodeUnitCount
                && state.elementsEqual(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        }

        /// `MessageFunnel.expression` over this side.
        var expectedFunnel: Int64 {
            let end: Int64 =
                if isState("cancelled") { 1 } else if isState("failed") { 2 } else if isState("expired") { 3 }
                else if isState("no_devices") { 4 } else if isState("superseded") { 5 } else { 0 }
            return end * 16 + (present(.handedOffAt) ? 1 : 0) + (present(.sentAt) ? 2 : 0) + (present(.displayedAt) ? 4 : 0)
                + (present(.openedAt) ? 8 : 0)
        }

        /// Schema v14's policy bits: held once (1), withheld (2).
        var policy: Int64 { (present(.deferredAt) ? 1 : 0) + (isState("suppressed") ? 2 : 0) }
    }
}
