import HeraldStorage

/// Random (version 4) UUIDs, lowercase, as APNs' `apns-id` uses them.
public enum UUIDv4 {
    public static func make() -> String {
        let (a, b) = UUIDText.randomBits()
        let high = (a & ~0xF000) | 0x4000                    // version 4
        let low = (b & ~(0xC000 << 48)) | (0x8000 << 48)      // RFC 4122 variant
        return UUIDText.format(high: high, low: low)
    }
}
