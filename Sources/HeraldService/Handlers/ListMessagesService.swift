import GRPCEngine
import HeraldCore
import HeraldProtos
import HeraldStorage

/// `herald.v1.PushService/ListMessages`: a user's messages, newest first,
/// in pages of `page_size` (≤ 500; 0 means 50) with an opaque keyset
/// `page_token` (``PageToken``). A bundle the token may not see is
/// NOT_FOUND, as GetMessage answers for its messages.
struct ListMessagesService: Sendable {
    static let path = "/herald.v1.PushService/ListMessages"
    static let defaultPageSize = 50
    static let maxPageSize = 500

    let policy: AccessPolicy
    let store: any MessageReadSide

    func list(_ request: GRPCRequest) async throws -> [UInt8] {
        let caller = try policy.authenticate(request.metadata)
        let query = try ProtobufC.withUnpacked(Herald__V1__ListMessagesRequest.self, from: request.message) { wire in
            try Self.query(wire)
        }
        try ReadSideAccess.check(caller, bundleID: query.bundleID)
        let page = try await store.listMessages(query)
        let arena = CArena()
        var response = Herald__V1__ListMessagesResponse.initialized()
        let items = page.items.map { ReadSideWire.summary($0.message, arena) }
        response.n_messages = items.count
        response.messages = arena.pointerArray(items)
        let hash = PageToken.queryHash(bundleID: query.bundleID, userID: query.userID, campaignID: query.campaignID, states: query.states)
        response.next_page_token = arena.string(page.next.map { PageToken(cursor: $0, queryHash: hash).encoded() } ?? "")
        return withExtendedLifetime(arena) { ProtobufC.pack(&response) }
    }

    /// The store query a request asks for; INVALID_ARGUMENT naming every bad field.
    static func query(_ wire: borrowing Herald__V1__ListMessagesRequest) throws -> MessageListQuery {
        var decoder = RequestDecoder()
        let bundleID = decoder.required(wire.bundle_id, "bundle_id", maxBytes: Validator.Limits.bundleID)
        let userID = decoder.required(wire.user_id, "user_id", maxBytes: Validator.Limits.userID)
        let campaignID = decoder.optionalCampaignID(wire.campaign_id)
        let states = decoder.enumSet(wire.states, count: wire.n_states, limit: MessageState.allCases.count * 2, "states") {
            MessageState(wire: $0)
        }
        let size = wire.page_size
        if size < 0 || size > Int32(maxPageSize) {
            decoder.check("is \(size); it must be 1 to \(maxPageSize) (0 means \(defaultPageSize))", "page_size")
        }
        let token = decoder.optionalString(wire.page_token, "page_token")
        try decoder.finish()
        var query = MessageListQuery(
            bundleID: bundleID, userID: userID, campaignID: campaignID, states: states,
            limit: size == 0 ? defaultPageSize : Int(size))
        if let token {
            let hash = PageToken.queryHash(bundleID: bundleID, userID: userID, campaignID: campaignID, states: states)
            do throws(PageToken.Problem) {
                query.after = try PageToken.decode(token, expectedHash: hash).cursor
            } catch {
                let reason = switch error {
                case .tooLong(let count): "is \(count) bytes; the limit is \(PageToken.maxLength)"
                case .malformed: "is not a page token Herald issued"
                case .otherQuery: "was issued for another query (bundle_id, user_id, campaign_id and states must stay the same)"
                }
                throw ValidationError([FieldViolation(field: "page_token", reason: reason)])
            }
        }
        return query
    }
}

extension MessageState {
    /// The domain state of a wire value; nil for UNSPECIFIED and unknown numbers.
    init?(wire: Herald__V1__MessageState) {
        guard let state = MessageState.allCases.first(where: { $0.wire == wire }) else { return nil }
        self = state
    }
}
