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
