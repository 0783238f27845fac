import Foundation
import HeraldCore
@testable import HeraldPostgres
import Logging
import PostgresNIO
import Synchronization
import Testing
@testable import HeraldStorage

/// The two PostgreSQL flakes of the full suite, made likely: a close timeout
/// reported for a pool that had ended, and a connection the server killed
/// handed to the next call before the pool knew.
@Suite("PostgreSQL: bounded waits and killed connections", .timeLimit(.minutes(2)))
struct PostgresConnectionLossTests {
    /// A task that ends is reported as ended, every time. Before the fix the
    /// waiter cancelled the timer before answering, and the timer's wake-up
    /// on another thread could answer first ("did not end").
    @Test func aBoundedWaitOnATaskThatEndsAlwaysSaysItEnded() async {
        let lanes = 8, rounds = 2_000
        let wrong = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<lanes {
                group.addTask {
                    var wrong = 0
                    for _ in 0..<rounds {
                        let quick = Task<Void, Never> {}
                        if await BoundedWait.value(of: quick, atMost: .seconds(30)) == false { wrong += 1 }
                    }
                    return wrong
                }
            }
            return await group.reduce(0, +)
        }
        #expect(wrong == 0, "\(wrong) of \(lanes * rounds) waits on a task that ended said it did not")
    }
}
