import GRPCEngine
import HeraldProtos
import Testing

@testable import HeraldService

/// Server reflection answered in memory from the embedded descriptor set.
@Suite("Server reflection", .timeLimit(.minutes(1)))
struct ReflectionTests {
    typealias Request = Grpc__Reflection__V1__ServerReflectionRequest

    let reflection = ReflectionService()

    /// A packed request; `build` sets the oneof (strings from `arena`).
    static func request(host: String = "", _ build: (inout Request, CArena) -> Void) -> [UInt8] {
        let arena = CArena()
        var request = Request.initialized()
        request.host = arena.string(host)
        build(&request, arena)
        return withExtendedLifetime(arena) { ProtobufC.pack(&request) }
    }

    static func symbol(_ name: String) -> [UInt8] {
        request {
            $0.message_request_case = GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_SYMBOL
            $0.file_containing_symbol = $1.string(name)
        }
    }

    static func filename(_ name: String) -> [UInt8] {
        request {
            $0.message_request_case = GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_BY_FILENAME
            $0.file_by_filename = $1.string(name)
        }
    }

    /// What a response says, decoded back into the handler's own terms, plus
    /// the echoed request's symbol or file name, if any.
    static func decode(_ bytes: [UInt8]) throws -> (answer: ReflectionService.Answer, echoed: ReflectionService.Query?, host: String) {
        try ProtobufC.withUnpacked(ReflectionService.Response.self, from: bytes) { response in
            let echoed = response.original_request.map { ReflectionService.query($0.pointee) }
            let host = String(cString: response.valid_host)
            switch response.message_response_case {
            case GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_FILE_DESCRIPTOR_RESPONSE:
                let files = try #require(response.file_descriptor_response).pointee
                let list = (0..<files.n_file_descriptor_proto).map { i in
                    let data = files.file_descriptor_proto[i]
                    return [UInt8](UnsafeBufferPointer(start: data.data, count: data.len))
                }
                return (.files(list), echoed, host)
            case GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_LIST_SERVICES_RESPONSE:
                let services = try #require(response.list_services_response).pointee
                let names = (0..<services.n_service).map { String(cString: services.service[$0]!.pointee.name) }
                return (.services(names), echoed, host)
            case GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ALL_EXTENSION_NUMBERS_RESPONSE:
                let numbers = try #require(response.all_extension_numbers_response).pointee
                let list = (0..<numbers.n_extension_number).map { numbers.extension_number[$0] }
                return (.extensionNumbers(baseType: String(cString: numbers.base_type_name), numbers: list), echoed, host)
            case GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE:
                let error = try #require(response.error_response).pointee
                return (.error(GRPCStatus.Code(rawValue: Int(error.error_code)), String(cString: error.error_message)), echoed, host)
            default:
                Issue.record("a response with no message_response")
                return (.services([]), echoed, host)
            }
        }
    }

    /// The names of the FileDescriptorProtos in a files answer.
    static func fileNames(_ answer: ReflectionService.Answer) throws -> [String] {
        guard case .files(let files) = answer else {
            Issue.record("expected files, got \(answer)")
            return []
        }
        return try files.map { try #require(WireFields.parse($0[...]).first { $0.number == 1 }).string() }
    }

    @Test func listServicesNamesEveryRegisteredService() throws {
        let response = try Self.decode(reflection.respond(to: Self.request(host: "herald:50051") {
            $0.message_request_case = GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_LIST_SERVICES
            $0.list_services = $1.string("*")
        }))
        #expect(response.answer == .services([
            "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection",
            "herald.v1.DeviceService", "herald.v1.PushService",
        ]))
        #expect(response.echoed == .listServices)
        #expect(response.host == "herald:50051")
        // Every service listed can be described from the embedded set.
        for service in ReflectionService.registeredServices {
            #expect(DescriptorIndex.embedded.services.contains(service))
        }
    }

    @Test func fileByFilenameSendsTheFileThenItsImports() throws {
        let response = try Self.decode(reflection.respond(to: Self.filename("herald/v1/push_service.proto")))
        #expect(try Self.fileNames(response.answer) == [
            "herald/v1/push_service.proto", "google/protobuf/struct.proto", "herald/v1/read_side.proto",
            "herald/v1/types.proto",
        ])
        #expect(response.echoed == .fileByFilename("herald/v1/push_service.proto"))
    }

    @Test("file_containing_symbol finds services, methods, nested types, enums and their values", arguments: [
        ("herald.v1.PushService", "herald/v1/push_service.proto"),
        ("herald.v1.PushService.Schedule", "herald/v1/push_service.proto"),
        ("herald.v1.DeviceService.RegisterDevice", "herald/v1/device_service.proto"),
        ("herald.v1.Platform", "herald/v1/types.proto"),
        ("google.protobuf.Struct.FieldsEntry", "google/protobuf/struct.proto"),
        ("grpc.health.v1.HealthCheckResponse.ServingStatus", "grpc/health/v1/health.proto"),
        ("grpc.health.v1.HealthCheckResponse.SERVICE_UNKNOWN", "grpc/health/v1/health.proto"),
        ("grpc.health.v1.Health.Watch", "grpc/health/v1/health.proto"),
        ("grpc.reflection.v1alpha.ServerReflection", "grpc/reflection/v1alpha/reflection.proto"),
        ("grpc.reflection.v1.ServerReflectionRequest", "grpc/reflection/v1/reflection.proto"),
    ])
    func fileContainingSymbol(symbol: String, file: String) throws {
        let response = try Self.decode(reflection.respond(to: Self.symbol(symbol)))
        let names = try Self.fileNames(response.answer)
        #expect(names.first == file)
        // The transitive closure, each file once: grpcurl builds from it alone.
        #expect(Set(names).count == names.count)
        for name in names {
            for dependency in try #require(DescriptorIndex.embedded.files[name]).dependencies {
                #expect(names.contains(dependency))
            }
        }
        #expect(response.echoed == .fileContainingSymbol(symbol))
    }

    @Test func unknownNamesAreNotFoundWithTheNameQuoted() throws {
        #expect(try Self.decode(reflection.respond(to: Self.symbol("acme.Nope"))).answer
            == .error(.notFound, "symbol \"acme.Nope\" not found"))
        #expect(try Self.decode(reflection.respond(to: Self.filename("acme/nope.proto"))).answer
            == .error(.notFound, "file \"acme/nope.proto\" not found"))
        let long = String(repeating: "x", count: 100)
        #expect(try Self.decode(reflection.respond(to: Self.symbol(long))).answer
            == .error(.notFound, "symbol \"" + String(repeating: "x", count: 64) + "…\" not found"))
    }

    @Test func extensionsAreNotFoundAndNumbersEmpty() throws {
        let extensionRequest = Self.request {
            $0.message_request_case = GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_EXTENSION
            $0.file_containing_extension = $1.message(Grpc__Reflection__V1__ExtensionRequest.self) { [arena = $1] in
                $0.containing_type = arena.string("herald.v1.ScheduleRequest")
                $0.extension_number = 100
            }
        }
        #expect(try Self.decode(reflection.respond(to: extensionRequest)).answer
            == .error(.notFound, "extension 100 of \"herald.v1.ScheduleRequest\" not found"))
        let numbers = { (type: String) in
            Self.request {
                $0.message_request_case = GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_ALL_EXTENSION_NUMBERS_OF_TYPE
                $0.all_extension_numbers_of_type = $1.string(type)
            }
        }
        #expect(try Self.decode(reflection.respond(to: numbers("herald.v1.ScheduleRequest"))).answer
            == .extensionNumbers(baseType: "herald.v1.ScheduleRequest", numbers: []))
        #expect(try Self.decode(reflection.respond(to: numbers("herald.v1.Nope"))).answer
            == .error(.notFound, "type \"herald.v1.Nope\" not found"))
    }

    @Test("bytes that are no request, or ask nothing, are INVALID_ARGUMENT", arguments: [
        [0xFF, 0xFF, 0xFF], [0x22, 0x05, 0x61], [],
    ] as [[UInt8]])
    func malformedRequestIsInvalidArgument(bytes: [UInt8]) throws {
        let response = try Self.decode(reflection.respond(to: bytes))
        guard case .error(let code, _) = response.answer else {
            Issue.record("expected an error_response, got \(response.answer)")
            return
        }
        #expect(code == .invalidArgument)
    }

    @Test func streamAnswersEachRequestInOrder() async throws {
        let (requests, input) = AsyncStream.makeStream(of: [UInt8].self)
        let (responses, output) = AsyncStream.makeStream(of: [UInt8].self)
        input.yield(Self.symbol("herald.v1.PushService"))
        input.yield(Self.symbol("acme.Nope"))
        input.finish()
        try await reflection.serve(requests) { output.yield($0) }
        output.finish()
        var answers: [ReflectionService.Answer] = []
        for await response in responses { answers.append(try Self.decode(response).answer) }
        #expect(answers.count == 2)
        #expect(try Self.fileNames(answers[0]).first == "herald/v1/push_service.proto")
        #expect(answers[1] == .error(.notFound, "symbol \"acme.Nope\" not found"))
    }

    @Test func embeddedSetHoldsEveryProto() {
        #expect(Set(DescriptorIndex.embedded.files.keys) == [
            "google/protobuf/struct.proto", "grpc/health/v1/health.proto",
            "grpc/reflection/v1/reflection.proto", "grpc/reflection/v1alpha/reflection.proto",
            "herald/v1/device_service.proto", "herald/v1/push_service.proto", "herald/v1/read_side.proto",
            "herald/v1/types.proto",
        ])
        #expect(DescriptorIndex.embedded.closure(of: "google/protobuf/struct.proto").map(\.name) == ["google/protobuf/struct.proto"])
    }
}
