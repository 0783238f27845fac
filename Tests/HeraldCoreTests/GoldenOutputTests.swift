import Foundation
import Testing
@testable import HeraldCore

/// Byte-for-byte regression guard for the rendering fast paths: renders a
/// matrix of messages × locales × tokens (APNs alert, handoff, revoke, FCM,
/// size check, validation errors) and compares the whole transcript with the
/// one recorded before the performance work, committed as
/// `Golden/transcript.txt`. A difference names the first differing line.
/// Set `HERALD_GOLDEN_DUMP=<path>` to write the new transcript (then `diff`
/// it against the committed one).
@Suite("Golden rendering output")
struct GoldenOutputTests {
    /// The recording's length and FNV-1a 64 before the performance work: the
    /// committed file must still be that recording.
    static let expectedLength = 629_140
    static let expectedHash: UInt64 = 17_575_443_537_558_635_097

    /// Beside this source file (excluded from the target's sources).
    static let goldenPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Golden/transcript.txt").path

    @Test("the committed transcript is the original recording")
    func committedFile() throws {
        let expected = try String(contentsOfFile: Self.goldenPath, encoding: .utf8)
        #expect(expected.utf8.count == Self.expectedLength)
        #expect(GoldenTranscript.fnv1a(expected) == Self.expectedHash)
    }

    @Test("rendered bytes equal the committed transcript")
    func golden() throws {
        let actual = GoldenTranscript.transcript()
        if let path = ProcessInfo.processInfo.environment["HERALD_GOLDEN_DUMP"] {
            try actual.write(toFile: path, atomically: false, encoding: .utf8)
        }
        let expected = try String(contentsOfFile: Self.goldenPath, encoding: .utf8)
        if let difference = Self.firstDifference(expected: expected, actual: actual) {
            Issue.record("transcript differs from Golden/transcript.txt: \(difference)")
        }
    }

    /// The first line where the texts differ, both versions; nil when equal.
    static func firstDifference(expected: String, actual: String) -> String? {
        guard expected != actual else { return nil }
        let want = expected.split(separator: "\n", omittingEmptySubsequences: false)
        let got = actual.split(separator: "\n", omittingEmptySubsequences: false)
        let index = (0..<min(want.count, got.count)).first { want[$0] != got[$0] } ?? min(want.count, got.count)
        let line = { (lines: [Substring]) in index < lines.count ? "\"\(lines[index])\"" : "(end of text)" }
        return "line \(index + 1)\n  expected: \(line(want))\n  actual:   \(line(got))"
    }

    @Test("a difference names the first differing line")
    func differenceReport() {
        #expect(Self.firstDifference(expected: "a\nb\nc", actual: "a\nb\nc") == nil)
        #expect(Self.firstDifference(expected: "a\nb\nc", actual: "a\nx\nc")
            == "line 2\n  expected: \"b\"\n  actual:   \"x\"")
        #expect(Self.firstDifference(expected: "a\nb", actual: "a\nb\nc")
            == "line 3\n  expected: (end of text)\n  actual:   \"c\"")
    }
}
