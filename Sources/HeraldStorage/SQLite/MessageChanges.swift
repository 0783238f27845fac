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

    /// The sums not yet written.
    struct Sums {
        var states: [String: Int] = [:]
        var campaigns: [CampaignKey: Int] = [:]

        var isEmpty: Bool { states.isEmpty && campaigns.isEmpty }
    }

    private let handle: OpaquePointer
    private let changes: OpaquePointer
    private(set) var sums = Sums()
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
            var events: [Row] = []
            var fixes: [(rowid: Int64, funnel: Int64)] = []
            for index in 0..<count {
                let before = Row(changes, index, after: false)
                if cinterop_row_changes_op(changes, index) == SQLITE_DELETE {
                    add(-1, state: before.state, campaign: before.campaignKey)
                    continue
                }
                let after = Row(changes, index, after: true)
                if before.state != after.state {
                    add(-1, state: before.state, campaign: nil)
                    add(1, state: after.state, campaign: nil)
                    events.append(after)
                }
                let funnel = after.expectedFunnel
                if after.funnel != funnel { fixes.append((cinterop_row_changes_rowid(changes, index), funnel)) }
                let from = before.campaignKey, to = after.campaignKey
                if from != to {
                    add(-1, state: nil, campaign: from)
                    add(1, state: nil, campaign: to)
                }
            }
            cinterop_row_changes_clear(changes)
            for event in events {
                try db.run(Self.insertEvent) { statement in
                    try statement.bind(event.bundleID, at: 1)
                    try statement.bind(event.updatedAt, at: 2)
                    try statement.bind(event.state, at: 3)
                    try statement.bind(event.id, at: 4)
                    try statement.bind(event.idempotencyKey, at: 5)
                    try statement.bind(event.userID, at: 6)
                    try statement.bind(event.campaignID, at: 7)
                    try statement.bind(event.platform, at: 8)
                }
            }
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
        for (state, n) in sums.states where n != 0 {
            try db.run(Self.countState) { statement in
                try statement.bind(state, at: 1)
                try statement.bind(n, at: 2)
            }
        }
        for (key, n) in sums.campaigns where n != 0 {
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
    }

    /// Drops everything (the transaction rolled back).
    func discard() { restore(Sums()) }

    private func add(_ n: Int, state: String?, campaign: CampaignKey?) {
        if let state { sums.states[state, default: 0] += n }
        if let campaign { sums.campaigns[campaign, default: 0] += n }
    }

    static let insertEvent = HotSQL("""
        INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
        """)
    static let fixFunnel = HotSQL("UPDATE messages SET funnel = ?2 WHERE rowid = ?1")
    static let countState = HotSQL(MessageRows.countStateSQL)
    static let countCampaign = HotSQL(MessageRows.countCampaignSQL)

    /// One side of a kept change, as Swift values.
    private struct Row {
        var id: String
        var bundleID: String
        var platform: String
        var userID: String
        var campaignID: String
        var idempotencyKey: String?
        var deliveryMethod: String
        var abTest: Int64
        var state: String
        var updatedAt: Int64
        var funnel: Int64
        var deferred: Bool
        var handedOff: Bool
        var sent: Bool
        var displayed: Bool
        var opened: Bool

        init(_ changes: OpaquePointer, _ index: Int32, after: Bool) {
            func value(_ column: Column) -> cinterop_row_value {
                cinterop_row_changes_value(changes, index, after ? 1 : 0, Int32(column.rawValue))
            }
            func text(_ column: Column) -> String? {
                let v = value(column)
                guard v.type == SQLITE_TEXT, let text = v.text else { return nil }
                return String(decoding: UnsafeBufferPointer(start: text, count: Int(v.length)), as: UTF8.self)
            }
            func integer(_ column: Column) -> Int64 { value(column).integer }
            func present(_ column: Column) -> Bool { value(column).type != SQLITE_NULL }
            id = text(.id) ?? ""
            bundleID = text(.bundleID) ?? ""
            platform = text(.platform) ?? ""
            userID = text(.userID) ?? ""
            campaignID = text(.campaignID) ?? ""
            idempotencyKey = text(.idempotencyKey)
            deliveryMethod = text(.deliveryMethod) ?? ""
            abTest = integer(.abTest)
            state = text(.state) ?? ""
            updatedAt = integer(.updatedAt)
            funnel = integer(.funnel)
            deferred = present(.deferredAt)
            handedOff = present(.handedOffAt)
            sent = present(.sentAt)
            displayed = present(.displayedAt)
            opened = present(.openedAt)
        }

        /// `MessageFunnel.expression` over this row.
        var expectedFunnel: Int64 {
            let end: Int64 = switch state {
            case "cancelled": 1
            case "failed": 2
            case "expired": 3
            case "no_devices": 4
            case "superseded": 5
            default: 0
            }
            return end * 16 + (handedOff ? 1 : 0) + (sent ? 2 : 0) + (displayed ? 4 : 0) + (opened ? 8 : 0)
        }

        /// Schema v14's policy bits: held once (1), withheld (2).
        var policy: Int64 { (deferred ? 1 : 0) + (state == "suppressed" ? 2 : 0) }

        var campaignKey: CampaignKey {
            CampaignKey(bundleID: bundleID, campaignID: campaignID, deliveryMethod: deliveryMethod, abTest: abTest, funnel: funnel,
                        policy: policy)
        }
    }
}
