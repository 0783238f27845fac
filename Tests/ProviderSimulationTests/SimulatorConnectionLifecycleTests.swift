import ProviderSimulation
import Testing

/// The connection's lifecycle enum, without nghttp2 (the session is a string).
@Suite("Simulator connection lifecycle")
struct SimulatorConnectionLifecycleTests {
    typealias Lifecycle = SimulatorConnectionLifecycle<String>

    @Test func servesThenGoesAwayThenClosesThenIsRemoved() {
        var lifecycle = Lifecycle()
        #expect(lifecycle.session == nil && !lifecycle.isClosing)
        let started = lifecycle.start("session")
        #expect(started)
        #expect(lifecycle.session == "session")
        #expect(lifecycle.goAwayLastStreamID == nil)
        lifecycle.goAwaySent(lastStreamID: 5)
        #expect(lifecycle.goAwayLastStreamID == 5)
        lifecycle.goAwaySent(lastStreamID: 3)  // a later GOAWAY may name fewer streams
        #expect(lifecycle.goAwayLastStreamID == 3)
        let result2 = lifecycle.beginClose()
        #expect(result2)
        #expect(lifecycle.isClosing)
        #expect(lifecycle.session == nil && lifecycle.goAwayLastStreamID == nil)
        let result3 = lifecycle.beginClose()
        #expect(!result3)  // once
        let result4 = lifecycle.remove()
        #expect(result4)  // a session had started
        #expect(lifecycle.isClosing)
    }

    @Test func removedWithoutASessionSaysSo() {
        var handshaking = Lifecycle()
        let result5 = handshaking.remove()
        #expect(!result5)
        var closedEarly = Lifecycle()
        let result6 = closedEarly.beginClose()
        #expect(result6)
        let result7 = closedEarly.remove()
        #expect(!result7)
    }

    @Test func removedWhileServingHadASession() {
        var lifecycle = Lifecycle()
        _ = lifecycle.start("session")
        let result8 = lifecycle.remove()
        #expect(result8)
        #expect(lifecycle.session == nil)
    }

    @Test func aHandshakeFinishingAfterCloseIsNotServed() {
        var lifecycle = Lifecycle()
        let result9 = lifecycle.beginClose()
        #expect(result9)
        let result10 = lifecycle.start("late")
        #expect(!result10)
        #expect(lifecycle.session == nil && lifecycle.isClosing)
    }

    #if DEBUG
    @Test func startingTwiceFailsInDebugBuilds() async {
        await #expect(processExitsWith: .failure) {
            var lifecycle = SimulatorConnectionLifecycle<String>()
            _ = lifecycle.start("one")
            _ = lifecycle.start("two")
        }
    }

    @Test func goAwayBeforeServingFailsInDebugBuilds() async {
        await #expect(processExitsWith: .failure) {
            var lifecycle = SimulatorConnectionLifecycle<String>()
            lifecycle.goAwaySent(lastStreamID: 1)
        }
    }

    @Test func removingTwiceFailsInDebugBuilds() async {
        await #expect(processExitsWith: .failure) {
            var lifecycle = SimulatorConnectionLifecycle<String>()
            _ = lifecycle.remove()
            _ = lifecycle.remove()
        }
    }
    #endif
}
