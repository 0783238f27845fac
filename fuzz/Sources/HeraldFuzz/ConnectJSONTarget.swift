import HeraldClient

/// Input: a selector byte (the method, in path order) and a Connect JSON
/// body, read as the method's request by the proto3 JSON mapping, as a
/// Connect call's body is. For a body that reads, the message printed as
/// proto3 JSON must read back, and printing that must give the same bytes
/// (map entries may be reordered by the printer, so bytes are compared
/// after one print).
enum ConnectJSONTarget {
    /// Every method's path, sorted: the selector's range.
    static let paths = ProtoServices.methods.keys.sorted()

    static func run(_ input: [UInt8]) {
        guard let selector = input.first else { return }
        let method = ProtoServices.methods[paths[Int(selector) % paths.count]]!
        guard let packed = try? ProtoJSONReader.pack(method.request, json: Array(input.dropFirst())) else { return }
        let printed: [UInt8]
        do {
            printed = try ProtoJSON.proto3(method.request, packed)
        } catch {
            preconditionFailure("packed bytes do not read back: \(error)")
        }
        let repacked: [UInt8]
        do {
            repacked = try ProtoJSONReader.pack(method.request, json: printed)
        } catch {
            preconditionFailure("printed JSON does not read: \(error) in \(String(decoding: printed, as: UTF8.self))")
        }
        let reprinted = try? ProtoJSON.proto3(method.request, repacked)
        precondition(reprinted == printed, "print → read → print changed the JSON")
    }
}
