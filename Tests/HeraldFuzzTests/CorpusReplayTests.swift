import HeraldFuzz
import Testing

/// Every committed seed and every reproducer under fuzz/crashes/ runs through
/// its target on each test run, so a fixed finding stays fixed.
@Suite("Fuzz corpus replay")
struct CorpusReplayTests {
    /// The repository root, from this file's path (Tests/HeraldFuzzTests/…).
    static let root: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }()

    @Test(arguments: FuzzTarget.allCases)
    func replay(_ target: FuzzTarget) {
        let seeds = Corpus.files(at: "\(Self.root)/fuzz/corpus/\(target.rawValue)")
        let crashes = Corpus.files(at: "\(Self.root)/fuzz/crashes/\(target.rawValue)")
        #expect(!seeds.isEmpty, "no seeds for \(target.rawValue)")
        for file in seeds + crashes {
            let bytes = Corpus.read(file)
            #expect(bytes != nil, "cannot read \(file)")
            target.run(bytes ?? [])
        }
    }
}
