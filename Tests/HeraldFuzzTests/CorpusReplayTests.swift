import Dispatch
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
    func replay(_ target: FuzzTarget) async {
        let seeds = Corpus.files(at: "\(Self.root)/fuzz/corpus/\(target.rawValue)")
        let crashes = Corpus.files(at: "\(Self.root)/fuzz/crashes/\(target.rawValue)")
        #expect(!seeds.isEmpty, "no seeds for \(target.rawValue)")
        // The requests target blocks its thread until the handler's task is
        // done (libFuzzer calls it synchronously): run it on a thread of its
        // own, never on Swift's cooperative pool, which that task needs.
        let unreadable: [String] = await withCheckedContinuation { done in
            DispatchQueue(label: "fuzz-replay-\(target.rawValue)").async {
                var unreadable: [String] = []
                for file in seeds + crashes {
                    guard let bytes = Corpus.read(file) else {
                        unreadable.append(file)
                        continue
                    }
                    target.run(bytes)
                }
                done.resume(returning: unreadable)
            }
        }
        #expect(unreadable.isEmpty, "cannot read \(unreadable)")
    }
}
