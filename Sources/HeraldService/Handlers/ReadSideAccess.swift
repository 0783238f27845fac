import GRPCEngine
import HeraldCore
import HeraldStorage

/// Bundle scope of the read side. Where Schedule answers PERMISSION_DENIED,
/// the read side answers NOT_FOUND: it never confirms to a token that a
/// bundle it may not see has messages.
enum ReadSideAccess {
    static func check(_ caller: AccessPolicy.Grant?, bundleID: String) throws {
        guard caller?.allows(bundleID: bundleID) ?? true else {
            throw GRPCStatus(.notFound, "no messages of bundle_id \(ErrorText.quote(bundleID)) are visible to this token")
        }
    }

    /// Registers GetMessage, ListMessages and CampaignReport, each run
    /// under `reads` (one bound for the three).
    static func register(on server: GRPCServer, policy: AccessPolicy, store: any MessageReadSide, reads: ReadAdmission) {
        let admission = policy.admission
        let get = GetMessageService(policy: policy, store: store)
        server.register(GetMessageService.path, DomainStatus.async { request in try await reads.run { try await get.get(request) } },
                        admission: admission)
        let list = ListMessagesService(policy: policy, store: store)
        server.register(ListMessagesService.path, DomainStatus.async { request in try await reads.run { try await list.list(request) } },
                        admission: admission)
        let report = CampaignReportService(policy: policy, store: store)
        server.register(CampaignReportService.path, DomainStatus.async { request in try await reads.run { try await report.report(request) } },
                        admission: admission)
    }
}
