import CInterop
import HeraldPrimitives
import HeraldProtos

/// The methods of the services in `Protos/` (PushService, DeviceService,
/// grpc.health.v1.Health) by path, with their request and reply types, read
/// from the protoc-c service descriptors: what a Connect call at that path
/// decodes and encodes.
public enum ProtoServices {
    /// One method.
    public struct Method: Sendable {
        /// `/herald.v1.PushService/Schedule`.
        public let path: String
        /// The request message type.
        public let request: ProtoMessage.MessageType
        /// The reply message type.
        public let reply: ProtoMessage.MessageType
    }

    /// Every method, by path.
    public static let methods: [String: Method] = {
        var methods: [String: Method] = [:]
        // Copies of the descriptors: their pointers (names, methods, message
        // descriptors) are into the generated code's static data.
        for service in [
            herald__v1__push_service__descriptor, herald__v1__device_service__descriptor, grpc__health__v1__health__descriptor,
        ] {
            let name = String(cString: service.name)
            for index in 0..<Int(service.n_methods) {
                let method = service.methods[index]
                let path = "/\(name)/\(String(cString: method.name))"
                methods[path] = Method(
                    path: path, request: ProtoMessage.MessageType(descriptor: method.input),
                    reply: ProtoMessage.MessageType(descriptor: method.output))
            }
        }
        return methods
    }()
}

extension ProtoServices {
    /// The field names of every message the methods take or return, nested ones included.
    static let fieldNames: Set<String> = {
        var names = Set<String>()
        var seen = Set<UInt>()
        var pending = methods.values.flatMap { [$0.request.descriptor, $0.reply.descriptor] }
        while let descriptor = pending.popLast() {
            guard seen.insert(UInt(bitPattern: descriptor)).inserted else { continue }
            for number in 0..<Int(descriptor.pointee.n_fields) {
                let field = descriptor.pointee.fields[number]
                names.insert(String(cString: field.name))
                if field.type == PROTOBUF_C_TYPE_MESSAGE {
                    pending.append(field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self))
                }
            }
        }
        return names
    }()
}

extension ProtoJSON {
    /// `bytes` (a `type`) as proto3 JSON: fields at their default left out,
    /// lowerCamelCase names, enums by name, 64-bit integers as strings.
    ///
    /// - Throws: INTERNAL when the bytes are not a `type`.
    public static func proto3(_ type: ProtoMessage.MessageType, _ bytes: [UInt8]) throws(ClientFailure) -> [UInt8] {
        var writer = JSONWriter()
        writer.writeLenient(value(try ProtoMessage.read(type, bytes, defaults: false)))
        return writer.finish()
    }
}
