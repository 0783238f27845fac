import HeraldCore
import HeraldStorage

/// ListMessages' opaque `page_token`: a keyset cursor (the last item's
/// created_at and id) bound to the query that issued it.
///
/// Layout, hex-encoded: version (1 byte) · created_at (8, big-endian) ·
/// FNV-1a 64 of the query's bundle, user, campaign and states (8) · the
/// message id (UTF-8). A token that does not decode, has another version,
/// or was issued for another query is refused (INVALID_ARGUMENT): a cursor
/// never leaks into a query it was not made for.
struct PageToken: Sendable, Equatable {
    static let version: UInt8 = 1
    /// Longest token accepted, in characters (an id is 36 bytes today).
    static let maxLength = 256

    var cursor: MessageCursor
    var queryHash: UInt64

    /// Why a `page_token` was refused.
    enum Problem: Error, Equatable {
        case tooLong(Int)
        case malformed
        case otherQuery
    }

    static func queryHash(bundleID: String, userID: String, campaignID: String?, states: Set<MessageState>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ text: String) {
            for byte in text.utf8 {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01b3
            }
            hash = hash &* 0x100_0000_01b3  // a NUL separator (xor 0, then the prime)
        }
        mix(bundleID)
        mix(userID)
        mix(campaignID ?? "")
        for state in states.map(\.rawValue).sorted() { mix(state) }
        return hash
    }

    func encoded() -> String {
        var bytes: [UInt8] = [Self.version]
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: UInt64(bitPattern: cursor.createdAt) >> UInt64(shift))) }
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: queryHash >> UInt64(shift))) }
        bytes.append(contentsOf: cursor.id.utf8)
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xf)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Decodes `text` and checks it was issued for the query `expectedHash`.
    static func decode(_ text: String, expectedHash: UInt64) throws(Problem) -> PageToken {
        let utf8 = Array(text.utf8)
        guard utf8.count <= maxLength else { throw .tooLong(utf8.count) }
        guard utf8.count % 2 == 0, utf8.count > 34 else { throw .malformed }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { throw .malformed }
            bytes.append(high << 4 | low)
            index += 2
        }
        guard bytes[0] == version else { throw .malformed }
        let createdAt = bytes[1...8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let hash = bytes[9...16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard let id = String(validating: bytes[17...], as: UTF8.self), !id.isEmpty else { throw .malformed }
        guard hash == expectedHash else { throw .otherQuery }
        return PageToken(cursor: MessageCursor(createdAt: Int64(bitPattern: createdAt), id: id), queryHash: hash)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
