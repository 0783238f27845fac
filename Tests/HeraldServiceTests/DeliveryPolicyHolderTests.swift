import Foundation
import HeraldCore
import Testing
@testable import HeraldService

/// The delivery policies in force: swapped whole by a reload (what a
/// SIGHUP does), read per claim; a bad source keeps the set in force.
@Suite("Delivery policy holder")
struct DeliveryPolicyHolderTests {
    static func set(_ specs: String...) throws -> PolicySet {
        try PolicySet(specs.map { try PolicyRules.parse($0) { _ in nil } })
    }

    @Test func aReloadSwapsTheWholeSetAndNamesTheChanges() throws {
        let holder = DeliveryPolicyHolder(try Self.set("bundles=com.a,com.b cap=1/1h", "bundles=com.c quiet-hours=22:00-08:00"))
        let before = try #require(holder.rules(for: "com.a"))
        let changes = holder.replace(with: try Self.set("bundles=com.a cap=2/1h", "bundles=com.c quiet-hours=22:00-08:00", "bundles=com.d"))
        #expect(changes.added == ["com.d"] && changes.removed == ["com.b"] && changes.changed == ["com.a"])
        #expect(holder.rules(for: "com.a")?.caps.first?.count == 2)
        #expect(holder.rules(for: "com.b") == nil)
        // A value read before the swap (a claim in progress) keeps what it read.
        #expect(before.caps.first?.count == 1)
        #expect(holder.replace(with: .empty).removed == ["com.a", "com.c", "com.d"])
        #expect(holder.current.isEmpty)
    }

    @Test func aPolicyReloadedWhileReadersReadIsNeverHalfApplied() async throws {
        let one = try Self.set("bundles=com.a,com.b cap=1/1h")
        let two = try Self.set("bundles=com.a,com.b cap=2/1h")
        let holder = DeliveryPolicyHolder(one)
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for i in 0..<2000 { holder.replace(with: i % 2 == 0 ? two : one) }
                return true
            }
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<2000 {
                        let set = holder.current
                        // Both bundles come from one spec: always the same caps.
                        if set.rules(for: "com.a") != set.rules(for: "com.b") { return false }
                    }
                    return true
                }
            }
            for await ok in group { #expect(ok) }
        }
    }

    @Test func sourcesLoadSpecsAndAFileAndRefuseABadOne() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-policies-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.path + "/policies"
        try "# ops\nbundles=com.b timezone=Europe/Berlin quiet-hours=22:00-08:00\n".write(toFile: file, atomically: false, encoding: .utf8)
        let set = try DeliveryPolicySources(specs: ["bundles=com.a cap=1/1h"], file: file).load()
        #expect(set.rules(for: "com.a")?.caps.count == 1 && set.rules(for: "com.b")?.timezone == "Europe/Berlin")
        try "bundles=com.b timezone=Mars/Olympus\n".write(toFile: file, atomically: false, encoding: .utf8)
        #expect {
            _ = try DeliveryPolicySources(file: file).load()
        } throws: { error in
            let text = String(describing: error)
            return text.contains(file) && text.contains("line 1: timezone \"Mars/Olympus\"") && text.contains("unknown time zone")
        }
        #expect(throws: DeliveryPolicyError.self) { try DeliveryPolicySources(file: directory.path + "/missing").load() }
    }
}
