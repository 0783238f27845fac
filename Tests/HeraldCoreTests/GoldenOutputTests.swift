import Foundation
import Testing
@testable import HeraldCore

/// Byte-for-byte regression guard for the rendering fast paths: renders a
/// matrix of messages × locales × tokens (APNs alert, handoff, revoke, FCM,
/// size check, validation errors) and compares the whole transcript with the
/// one recorded before the performance work (FNV-1a 64 of the UTF-8 text and
/// its length). Set `HERALD_GOLDEN_DUMP=<path>` to write the transcript.
@Suite("Golden rendering output")
struct GoldenOutputTests {
    static let expectedLength = 629_140
    static let expectedHash: UInt64 = 17_575_443_537_558_635_097

    @Test("rendered bytes equal the recorded transcript")
    func golden() throws {
        let t = GoldenTranscript.transcript()
        if let path = ProcessInfo.processInfo.environment["HERALD_GOLDEN_DUMP"] {
            try t.write(toFile: path, atomically: true, encoding: .utf8)
        }
        #expect(t.utf8.count == Self.expectedLength)
        #expect(GoldenTranscript.fnv1a(t) == Self.expectedHash)
    }
}
