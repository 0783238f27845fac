import HeraldCore

/// The store and the scheduler count milliseconds since the epoch; the core
/// speaks `Timestamp`.
extension Timestamp {
    init(milliseconds: Int64) {
        let (seconds, remainder) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        self.init(seconds: seconds, nanoseconds: Int32(remainder) * 1_000_000)
    }

    var milliseconds: Int64 {
        seconds * 1000 + Int64(nanoseconds / 1_000_000)
    }
}
