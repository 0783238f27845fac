import Foundation
import HeraldPrimitives
import Testing
@testable import HeraldStorage

@Suite("Message IDs", .timeLimit(.minutes(1)))
struct MessageIDTests {
    @Test func uuidV7IsWellFormedAndTimeOrdered() throws {
        let a = UUIDv7.make(now: now), b = UUIDv7.make(now: now + 1)
        let uuid = try #require(UUID(uuidString: a))
        #expect(uuid.uuidString.lowercased() == a)
        #expect(a.count == 36 && Array(a)[14] == "7")
        #expect(["8", "9", "a", "b"].contains(Array(a)[19]))
        #expect(a < b)
        #expect(a.hasPrefix(String(UInt64(now), radix: 16).leftPadded(to: 12).prefix(8)))
    }
}

private extension String {
    func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
