import CInterop

/// The thread's buffered getrandom(2) output (`cinterop_random_bytes`) as a
/// generator, for the ids every RPC makes (message ids, generated keys,
/// Render's `apns-id`): one system call per 512 draws, where
/// `SystemRandomNumberGenerator` makes one per draw (two per UUID). Should
/// getrandom fail, the draw comes from the system generator (which traps
/// rather than return a weak value).
struct ThreadRandom: RandomNumberGenerator {
    mutating func next() -> UInt64 {
        var value: UInt64 = 0
        if withUnsafeMutableBytes(of: &value, { cinterop_random_bytes($0.baseAddress, $0.count) }) == 0 {
            return value
        }
        var system = SystemRandomNumberGenerator()
        return system.next()
    }
}
