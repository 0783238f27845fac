/// Finding the bytes of a string that need escaping, eight at a time.
extension JSONWriter {
    /// Copies `count` bytes and returns true when none needs escaping (see
    /// ``firstSpecial(_:from:)``); false as soon as one might (the copy is
    /// then incomplete). Eight bytes a step; the last partial word is done
    /// with an overlapping load, and 4–7 byte strings with two overlapping
    /// 4-byte loads, so only strings under four bytes go byte by byte.
    @inline(__always)
    static func copyIfPlain(from src: UnsafePointer<UInt8>, to dst: UnsafeMutablePointer<UInt8>, count n: Int) -> Bool {
        let s = UnsafeRawPointer(src)
        let d = UnsafeMutableRawPointer(dst)
        if n >= 8 {
            var i = 0
            while i + 8 <= n {
                let w = s.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                if mayNeedEscape(w) { return false }
                d.storeBytes(of: w, toByteOffset: i, as: UInt64.self)
                i += 8
            }
            if i < n {
                let w = s.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
                if mayNeedEscape(w) { return false }
                d.storeBytes(of: w, toByteOffset: n - 8, as: UInt64.self)
            }
            return true
        }
        if n >= 4 {
            let lo = s.loadUnaligned(as: UInt32.self)
            let hi = s.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self)
            if mayNeedEscape(UInt64(lo) | UInt64(hi) &<< 32) { return false }
            d.storeBytes(of: lo, as: UInt32.self)
            d.storeBytes(of: hi, toByteOffset: n - 4, as: UInt32.self)
            return true
        }
        var i = 0
        while i < n {
            let c = src[i]
            if c < 0x20 || c == 0x22 || c == 0x5C || c == 0xE2 { return false }
            dst[i] = c
            i += 1
        }
        return true
    }

    /// Whether any of the eight bytes of `w` may be below 0x20, `"`, `\\`
    /// or 0xE2 (never false when one is; rarely true when none is).
    @inline(__always)
    static func mayNeedEscape(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let below20 = (w &- ones &* 0x20) & ~w
        let q = w ^ (ones &* 0x22)
        let bs = w ^ (ones &* 0x5C)
        let e2 = w ^ (ones &* 0xE2)
        return (below20 | ((q &- ones) & ~q) | ((bs &- ones) & ~bs) | ((e2 &- ones) & ~e2)) & highs != 0
    }

    /// The index of the first byte at or after `from` that needs a look:
    /// below 0x20, `"`, `\\`, or 0xE2 (the lead byte of U+2028/U+2029).
    /// Scans eight bytes at a time (SWAR); the per-word test may report a
    /// word without such a byte (never the reverse), which the byte loop
    /// then simply passes over.
    @inline(__always)
    static func firstSpecial(_ buf: UnsafeBufferPointer<UInt8>, from: Int) -> Int {
        let n = buf.count
        var i = from
        if let base = buf.baseAddress {
            let raw = UnsafeRawPointer(base)
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            while i + 8 <= n {
                let w = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                let below20 = (w &- ones &* 0x20) & ~w
                let q = w ^ (ones &* 0x22)
                let bs = w ^ (ones &* 0x5C)
                let e2 = w ^ (ones &* 0xE2)
                let hits = (below20 | ((q &- ones) & ~q) | ((bs &- ones) & ~bs) | ((e2 &- ones) & ~e2)) & highs
                if hits != 0 { break }
                i += 8
            }
        }
        while i < n {
            let c = buf[i]
            if c < 0x20 || c == 0x22 || c == 0x5C || c == 0xE2 { return i }
            i += 1
        }
        return n
    }
}
