import GRPCEngine
import Synchronization
import Testing

@testable import HeraldService

/// The web API's call recorder is read once per request: a million reads
/// must leave it as it was set. (A function value stored directly in a
/// `Mutex` was wrapped in two more thunks by every read, and a call through
/// it overflowed the stack after ~25,000 requests: a remote crash.)
@Suite("ContextPush web API: the call recorder")
struct ContextPushRecorderTests {
    @Test func aMillionReadsLeaveTheRecorderCallableAtOnce() {
        let api = ContextPushAPI(admission: nil)
        let calls = Mutex(0)
        api.record { _, _, _ in calls.withLock { $0 += 1 } }
        for _ in 0..<1_000_000 { _ = api.currentRecorder() }
        api.currentRecorder()?.record(GRPCRequest(path: "/herald.v1.PushService/Schedule", message: []), .ok, 1)
        #expect(calls.withLock { $0 } == 1)
    }
}
