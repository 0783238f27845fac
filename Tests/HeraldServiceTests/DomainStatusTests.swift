import GRPCEngine
import HeraldCore
import HeraldStorage
import Testing

@testable import HeraldService

@Suite("Domain errors as gRPC statuses")
struct DomainStatusTests {
    @Test func validationNamesEveryField() {
        let error = ValidationError([
            FieldViolation(field: "user_id", reason: "is required"),
            FieldViolation(field: "content.title", reason: "is required"),
        ])
        let status = DomainStatus.status(for: error)
        #expect(status?.code == .invalidArgument)
        #expect(status?.message == "user_id: is required; content.title: is required")
    }

    @Test func disabledPlatformIsInvalidArgument() {
        #expect(DomainStatus.status(for: RenderError.disabled(.ios))?.code == .invalidArgument)
        #expect(DomainStatus.status(for: RenderError.disabled(.android))?.message.contains("android.enabled") == true)
    }

    @Test func storeFailuresAreRetryableUnavailable() {
        let status = DomainStatus.status(for: StoreError.closed)
        #expect(status?.code == .unavailable)
        #expect(status?.message.hasPrefix("store unavailable") == true)
    }

    @Test func statusesPassThroughAndOthersStayInternal() {
        #expect(DomainStatus.status(for: GRPCStatus(.notFound, "x")) == GRPCStatus(.notFound, "x"))
        struct Unexpected: Error {}
        #expect(DomainStatus.status(for: Unexpected()) == nil)
    }
}
