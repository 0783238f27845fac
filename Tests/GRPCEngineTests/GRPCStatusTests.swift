import Testing
@testable import GRPCEngine

@Suite("GRPCStatus")
struct GRPCStatusTests {
    static let table: [(GRPCStatus.Code, Int, String)] = [
        (.ok, 0, "OK"), (.cancelled, 1, "CANCELLED"), (.unknown, 2, "UNKNOWN"),
        (.invalidArgument, 3, "INVALID_ARGUMENT"), (.deadlineExceeded, 4, "DEADLINE_EXCEEDED"),
        (.notFound, 5, "NOT_FOUND"), (.alreadyExists, 6, "ALREADY_EXISTS"),
        (.permissionDenied, 7, "PERMISSION_DENIED"), (.resourceExhausted, 8, "RESOURCE_EXHAUSTED"),
        (.failedPrecondition, 9, "FAILED_PRECONDITION"), (.aborted, 10, "ABORTED"),
        (.outOfRange, 11, "OUT_OF_RANGE"), (.unimplemented, 12, "UNIMPLEMENTED"),
        (.internalError, 13, "INTERNAL"), (.unavailable, 14, "UNAVAILABLE"), (.dataLoss, 15, "DATA_LOSS"),
        (.unauthenticated, 16, "UNAUTHENTICATED"),
    ]

    @Test("raw values and names", arguments: table)
    func rawValueAndName(code: GRPCStatus.Code, raw: Int, name: String) {
        #expect(code.rawValue == raw)
        #expect(code.name == name)
        #expect(GRPCStatus.Code(rawValue: raw) == code)
    }

    @Test func unknownCodeName() {
        #expect(GRPCStatus.Code(rawValue: 42).name == "CODE_42")
    }

    @Test func description() {
        #expect(GRPCStatus(.notFound, "no such thing").description == "NOT_FOUND: no such thing")
        #expect(GRPCStatus(.ok, "").description == "OK")
    }
}
