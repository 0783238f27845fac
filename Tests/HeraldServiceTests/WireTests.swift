import HeraldPrimitives
import HeraldProtos
import Testing

@testable import HeraldService

@Suite("Wire helpers")
struct WireTests {
    @Test func uuidsAreVersion4LowercaseAndUnique() {
        var seen = Set<String>()
        for _ in 0..<10_000 {
            let id = UUIDv4.make()
            let bytes = Array(id.utf8)
            #expect(bytes.count == 36)
            #expect([8, 13, 18, 23].allSatisfy { bytes[$0] == UInt8(ascii: "-") })
            #expect(bytes[14] == UInt8(ascii: "4"))
            #expect("89ab".utf8.contains(bytes[19]))
            #expect(bytes.enumerated().allSatisfy { index, byte in
                [8, 13, 18, 23].contains(index) || "0123456789abcdef".utf8.contains(byte)
            })
            seen.insert(id)
        }
        #expect(seen.count == 10_000)
    }

    /// Struct{fields{key:"k", value:Value{struct_value:<inner>}}} nested `depth`
    /// times: three message levels (Struct, entry, Value) each.
    private func nestedStruct(depth: Int) -> [UInt8] {
        func varint(_ n: Int) -> [UInt8] {
            var n = n
            var out: [UInt8] = []
            repeat {
                let byte = UInt8(n & 0x7F)
                n >>= 7
                out.append(n > 0 ? byte | 0x80 : byte)
            } while n > 0
            return out
        }
        var inner: [UInt8] = []
        for _ in 0..<depth {
            let value = [0x2A] + varint(inner.count) + inner
            let entry = [0x0A, 0x01, 0x6B, 0x12] + varint(value.count) + value
            inner = [0x0A] + varint(entry.count) + entry
        }
        return inner
    }

    @Test func deepNestingIsRefused() {
        let descriptor = Google__Protobuf__Struct.descriptorForTests
        // Three message levels per JSON level: 33 levels are 99 messages.
        let shallow = nestedStruct(depth: 33)
        let deep = nestedStruct(depth: 34)
        #expect(shallow.withUnsafeBytes { WireWalk($0, descriptor: descriptor).problem } == nil)
        #expect(deep.withUnsafeBytes { WireWalk($0, descriptor: descriptor).problem } == .tooDeep)
        let deeper = nestedStruct(depth: 2_000)
        #expect(deeper.withUnsafeBytes { WireWalk($0, descriptor: descriptor).problem } == .tooDeep)
    }
}

extension Google__Protobuf__Struct {
    static var descriptorForTests: UnsafePointer<ProtobufCMessageDescriptor> {
        var message = Google__Protobuf__Struct()
        google__protobuf__struct__init(&message)
        return message.base.descriptor
    }
}
