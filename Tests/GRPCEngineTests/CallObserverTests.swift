import Synchronization
import Testing

@testable import GRPCEngine

/// The engine's call-observer hook: one report per gRPC call, with the
/// method's index, the status sent and the observer's annotation.
@Suite("Call observer (EmbeddedChannel)")
struct CallObserverTests {
    final class Recorder: GRPCCallObserver {
        let calls = Mutex<[GRPCFinishedCall]>([])
        var annotatesRequests: Bool { true }
        func annotate(_ request: GRPCRequest) -> String? { "bytes=\(request.message.count)" }
        func callFinished(_ call: GRPCFinishedCall) { calls.withLock { $0.append(call) } }
        var all: [GRPCFinishedCall] { calls.withLock { $0 } }
    }

    let observer = Recorder()
    let connection: ObservedConnection

    init() throws {
        connection = try ObservedConnection(observer: observer)
    }

    func call(_ path: String, method: String = "POST", message: [UInt8]? = []) throws {
        try connection.call(path, method: method, message: message)
    }

    @Test func unknownMethodsRefusalsAndNonGRPCRequests() throws {
        try call("/test.Echo/Nope")
        try call("/test.Echo/Locked", message: Array("secret".utf8))
        try call("/", method: "GET", message: nil)
        let calls = observer.all
        // A plain HTTP answer (GET) is not a call; each call is reported once.
        #expect(calls.map(\.method) == [-1, 2])
        #expect(calls.map(\.code) == [.unimplemented, .unauthenticated])
        #expect(calls.map(\.path) == ["/test.Echo/Nope", "/test.Echo/Locked"])
        // Refused from its headers: the body was never read, so never annotated.
        #expect(calls.allSatisfy { $0.annotation == nil })
    }

    @Test func answeredCallsCarryTheirStatusDurationAndAnnotation() throws {
        try call("/test.Echo/Sync", message: Array("hello".utf8))
        try call("/test.Echo/Fail", message: [1, 2])
        let calls = observer.all
        #expect(calls.map(\.method) == [0, 1])
        #expect(calls.map(\.code) == [.ok, .notFound])
        #expect(calls.map(\.annotation) == ["bytes=5", "bytes=2"])
        #expect(calls.allSatisfy { $0.duration >= .zero && $0.duration < .seconds(10) })
    }
}
