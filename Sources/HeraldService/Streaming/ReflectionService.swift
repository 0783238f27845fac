import GRPCEngine
import HeraldCore
import HeraldProtos

/// gRPC server reflection (`grpc.reflection.v1` and `v1alpha`
/// `ServerReflection/ServerReflectionInfo`), answering from the descriptors
/// of `Protos/` embedded in the binary. Engine-agnostic: one response per
/// request message (``respond(to:)``, pure) and a thin loop over a stream.
///
/// The two versions' messages are the same on the wire (same fields and
/// numbers; only the package differs), so both paths share the v1 structs.
struct ReflectionService: Sendable {
    static let v1Path = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
    static let v1alphaPath = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"

    /// What `list_services` names: the services Herald registers.
    static let registeredServices = [
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
        "herald.v1.DeviceService",
        "herald.v1.PushService",
    ]

    typealias Request = Grpc__Reflection__V1__ServerReflectionRequest
    typealias Response = Grpc__Reflection__V1__ServerReflectionResponse

    /// What one request asks, as Swift values.
    enum Query: Equatable {
        case fileByFilename(String)
        case fileContainingSymbol(String)
        case fileContainingExtension(type: String, number: Int32)
        case allExtensionNumbersOfType(String)
        case listServices
        case none
    }

    /// What one response says, as Swift values.
    enum Answer: Equatable {
        case files([[UInt8]])
        case extensionNumbers(baseType: String, numbers: [Int32])
        case services([String])
        case error(GRPCStatus.Code, String)
    }

    let index: DescriptorIndex
    let services: [String]

    init(index: DescriptorIndex = .embedded, services: [String] = Self.registeredServices) {
        self.index = index
        self.services = services
    }

    /// Answers each request message in turn until the client half-closes.
    func serve<Requests: AsyncSequence>(
        _ requests: Requests, send: @Sendable ([UInt8]) async throws -> Void
    ) async throws where Requests.Element == [UInt8] {
        for try await request in requests {
            try await send(respond(to: request))
        }
    }

    /// The `ServerReflectionResponse` to one `ServerReflectionRequest`.
    /// Failures are `error_response`s, so the stream stays usable: bytes that
    /// are no request answer INVALID_ARGUMENT (without `original_request`).
    func respond(to requestBytes: [UInt8]) -> [UInt8] {
        do {
            return try ProtobufC.withUnpacked(Request.self, from: requestBytes) { request in
                var original = copy request
                let answer = answer(Self.query(request))
                return withUnsafeMutablePointer(to: &original) { Self.encode(answer, original: $0) }
            }
        } catch let status as GRPCStatus {
            return Self.encode(.error(.invalidArgument, status.message), original: nil)
        } catch {
            return Self.encode(.error(.invalidArgument, "\(error)"), original: nil)
        }
    }

    func answer(_ query: Query) -> Answer {
        switch query {
        case .listServices:
            return .services(services)
        case .fileByFilename(let name):
            let files = index.closure(of: name)
            guard !files.isEmpty else { return .error(.notFound, "file " + ErrorText.quote(name) + " not found") }
            return .files(files.map(\.bytes))
        case .fileContainingSymbol(let symbol):
            guard let file = index.symbols[symbol] else {
                return .error(.notFound, "symbol " + ErrorText.quote(symbol) + " not found")
            }
            return .files(index.closure(of: file).map(\.bytes))
        case .fileContainingExtension(let type, let number):
            // Protos/ declares no extensions (proto3), so there is none to find.
            return .error(.notFound, "extension \(number) of " + ErrorText.quote(type) + " not found")
        case .allExtensionNumbersOfType(let type):
            guard index.messageTypes.contains(type) else {
                return .error(.notFound, "type " + ErrorText.quote(type) + " not found")
            }
            return .extensionNumbers(baseType: type, numbers: [])
        case .none:
            return .error(.invalidArgument, "the request sets none of message_request's fields")
        }
    }

    static func query(_ request: borrowing Request) -> Query {
        func text(_ pointer: UnsafeMutablePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }
        switch request.message_request_case {
        case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_BY_FILENAME:
            return .fileByFilename(text(request.file_by_filename))
        case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_SYMBOL:
            return .fileContainingSymbol(text(request.file_containing_symbol))
        case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_EXTENSION:
            let ext = request.file_containing_extension?.pointee
            return .fileContainingExtension(type: text(ext?.containing_type), number: ext?.extension_number ?? 0)
        case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_ALL_EXTENSION_NUMBERS_OF_TYPE:
            return .allExtensionNumbersOfType(text(request.all_extension_numbers_of_type))
        case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_LIST_SERVICES:
            return .listServices
        default:
            return .none
        }
    }

    /// Packs `answer`, echoing `original` (and its host) when there is one.
    static func encode(_ answer: Answer, original: UnsafeMutablePointer<Request>?) -> [UInt8] {
        let arena = CArena()
        var response = Response.initialized()
        if let original {
            response.original_request = original
            response.valid_host = original.pointee.host
        }
        // C copies of byte and number arrays, which protobuf-c reads while
        // packing below; freed on return (CArena holds strings and messages).
        var blob: UnsafeMutableBufferPointer<UInt8>?
        var entries: UnsafeMutableBufferPointer<ProtobufCBinaryData>?
        var numbersCopy: UnsafeMutableBufferPointer<Int32>?
        defer {
            blob?.deallocate()
            entries?.deallocate()
            numbersCopy?.deallocate()
        }
        switch answer {
        case .files(let files):
            let bytes = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(1, files.reduce(0) { $0 + $1.count }))
            let list = UnsafeMutableBufferPointer<ProtobufCBinaryData>.allocate(capacity: max(1, files.count))
            blob = bytes
            entries = list
            var offset = 0
            for (i, file) in files.enumerated() {
                _ = UnsafeMutableBufferPointer(rebasing: bytes[offset..<offset + file.count]).initialize(from: file)
                list[i] = ProtobufCBinaryData(len: file.count, data: bytes.baseAddress! + offset)
                offset += file.count
            }
            response.message_response_case = GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_FILE_DESCRIPTOR_RESPONSE
            response.file_descriptor_response = arena.message(Grpc__Reflection__V1__FileDescriptorResponse.self) {
                $0.n_file_descriptor_proto = files.count
                $0.file_descriptor_proto = list.baseAddress
            }
        case .extensionNumbers(let baseType, let numbers):
            let copy = UnsafeMutableBufferPointer<Int32>.allocate(capacity: max(1, numbers.count))
            _ = copy.initialize(from: numbers)
            numbersCopy = copy
            response.message_response_case = GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ALL_EXTENSION_NUMBERS_RESPONSE
            response.all_extension_numbers_response = arena.message(Grpc__Reflection__V1__ExtensionNumberResponse.self) {
                $0.base_type_name = arena.string(baseType)
                $0.n_extension_number = numbers.count
                $0.extension_number = copy.baseAddress
            }
        case .services(let names):
            let entries = names.map { name in
                arena.message(Grpc__Reflection__V1__ServiceResponse.self) { $0.name = arena.string(name) }
            }
            response.message_response_case = GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_LIST_SERVICES_RESPONSE
            response.list_services_response = arena.message(Grpc__Reflection__V1__ListServiceResponse.self) {
                $0.n_service = entries.count
                $0.service = arena.pointerArray(entries)
            }
        case .error(let code, let message):
            response.message_response_case = GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE
            response.error_response = arena.message(Grpc__Reflection__V1__ErrorResponse.self) {
                $0.error_code = Int32(code.rawValue)
                $0.error_message = arena.string(message)
            }
        }
        return withExtendedLifetime(arena) { ProtobufC.pack(&response) }
    }
}
