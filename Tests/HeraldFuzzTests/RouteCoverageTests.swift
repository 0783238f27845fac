import Dispatch
import HeraldFuzz
import Testing

/// The `requests` fuzz target reaches every route the server serves, and
/// every route answers inputs with unknown, repeated, reordered and
/// truncated fields (a StatusRequest carrying one unknown field once trapped
/// the process: `08 01` was a remote kill).
@Suite("Fuzz route coverage")
struct RouteCoverageTests {
    @Test("the requests target reaches every declared route")
    func everyRoute() {
        let reached = FuzzTarget.requestRoutes
        let declared = FuzzTarget.declaredRoutes
        #expect(Set(declared).subtracting(reached).isEmpty, "routes the fuzz target never reaches: \(Set(declared).subtracting(reached).sorted())")
        #expect(Set(reached).subtracting(declared).isEmpty, "fuzz routes the server does not declare: \(Set(reached).subtracting(declared).sorted())")
        #expect(reached.count == Set(reached).count, "a route listed twice")
        // Health, reflection (both versions), Status and herald.v1's read side at least.
        #expect(declared.count >= 14)
    }

    @Test("a Status request with an unknown field is answered, not a crash")
    func statusUnknownField() async {
        let status = try! #require(FuzzTarget.requestRoutes.firstIndex(of: "/herald.v1.PushService/Status"))
        let answer = await Self.answers([[UInt8(status), 0x08, 0x01]]).first
        #expect(answer == "status: ok")
    }

    @Test("every route answers hostile field layouts")
    func hostileLayouts() async throws {
        var inputs: [[UInt8]] = []
        for (selector, _) in FuzzTarget.requestRoutes.enumerated() {
            var bases: [[UInt8]] = [[]]
            for file in Corpus.files(at: "\(CorpusReplayTests.root)/fuzz/corpus/requests")
            where file.split(separator: "/").last?.hasPrefix("\(selector)-") == true {
                if let bytes = Corpus.read(file) { bases.append(Array(bytes.dropFirst())) }
            }
            #expect(bases.count > 1, "no seed for route \(FuzzTarget.requestRoutes[selector])")
            for base in bases {
                for variant in Self.variants(of: base) { inputs.append([UInt8(selector)] + variant) }
            }
        }
        let answers = await Self.answers(inputs)
        #expect(answers.count == inputs.count)
        #expect(answers.allSatisfy { !$0.isEmpty })
    }

    /// The message with unknown fields of every wire type (before, after,
    /// with small, large and reserved numbers), every field twice, its fields
    /// in reverse order, and truncated.
    static func variants(of message: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        for number: UInt64 in [1, 15, 19_000, 536_870_911] {
            let unknown: [[UInt8]] = [
                varint(number << 3) + varint(1),
                varint(number << 3 | 1) + [UInt8](repeating: 0xFF, count: 8),
                varint(number << 3 | 2) + varint(3) + [0x61, 0x00, 0x62],
                varint(number << 3 | 5) + [1, 2, 3, 4],
                varint(number << 3 | 3) + varint(number << 3 | 4),  // an empty group
                varint(number << 3 | 3),  // a group never closed
                varint(number << 3 | 6) + [0],  // wire types that do not exist
                varint(number << 3 | 7),
            ]
            for field in unknown {
                out.append(message + field)
                out.append(field + message)
            }
        }
        out.append(message + message)
        let fields = split(message)
        out.append(fields.reversed().flatMap { $0 })
        out.append(fields.flatMap { $0 + $0 })
        if !message.isEmpty { out.append(Array(message.dropLast())) }
        return out
    }

    static func varint(_ value: UInt64) -> [UInt8] {
        var value = value
        var out: [UInt8] = []
        while value >= 0x80 {
            out.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        out.append(UInt8(value))
        return out
    }

    /// The top-level fields of a well-formed message, each with its key.
    static func split(_ bytes: [UInt8]) -> [[UInt8]] {
        var fields: [[UInt8]] = []
        var index = 0
        func readVarint() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while index < bytes.count, shift < 64 {
                let byte = bytes[index]
                index += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
            return nil
        }
        while index < bytes.count {
            let start = index
            guard let key = readVarint() else { return [bytes] }
            switch key & 7 {
            case 0: guard readVarint() != nil else { return [bytes] }
            case 1: index += 8
            case 2:
                guard let length = readVarint() else { return [bytes] }
                index += Int(length)
            case 5: index += 4
            default: return [bytes]
            }
            guard index <= bytes.count else { return [bytes] }
            fields.append(Array(bytes[start..<index]))
        }
        return fields
    }

    /// Each input's answer, on a thread of its own (the target blocks its
    /// thread until the handler's task is done).
    static func answers(_ inputs: [[UInt8]]) async -> [String] {
        await withCheckedContinuation { done in
            DispatchQueue(label: "fuzz-route-coverage").async {
                done.resume(returning: inputs.map { FuzzTarget.requests.answer($0) ?? "" })
            }
        }
    }
}
