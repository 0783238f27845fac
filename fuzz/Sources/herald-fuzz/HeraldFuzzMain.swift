import HeraldFuzz

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One line to stderr (fd 2: the C `stderr` global is not concurrency-safe in Swift 6).
func printError(_ line: String) {
    let text = line + "\n"
    _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, text.utf8.count) }
}

#if HERALD_LIBFUZZER
// Built by fuzz/run.sh with -sanitize=fuzzer. SwiftPM links an executable's
// `main` to `<module>_main`, so that is defined here (no @main in this mode)
// and hands the command line to libFuzzer's driver. The target comes from
// the environment because libFuzzer owns the command line.
@_silgen_name("LLVMFuzzerRunDriver")
func llvmFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@_cdecl("herald_fuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    let name = getenv("HERALD_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        printError("set HERALD_FUZZ_TARGET to one of: \(names)")
        return 2
    }
    selectedTarget = target
    var count = argc
    var arguments = argv
    return llvmFuzzerRunDriver(&count, &arguments, fuzzerTestOneInput)
}

/// libFuzzer's entry, per input (its archive refers to it by this name).
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selectedTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// Set once in `fuzzMain` before libFuzzer's first callback (a C callback
/// cannot capture it), read only by the fuzzing thread.
nonisolated(unsafe) var selectedTarget = FuzzTarget.json
#else
/// Without libFuzzer: `herald-fuzz TARGET PATH…` runs every file under the
/// paths through the target once (reproduce a crash file, replay a corpus);
/// with HERALD_FUZZ_VERBOSE set, prints how each request would be answered.
@main
struct ReplayTool {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1 else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
            printError("usage: herald-fuzz \(names) FILE_OR_DIR…")
            exit(2)
        }
        let verbose = getenv("HERALD_FUZZ_VERBOSE") != nil
        var count = 0
        for path in arguments.dropFirst() {
            for file in Corpus.files(at: path) {
                guard let bytes = Corpus.read(file) else {
                    printError("cannot read \(file)")
                    exit(1)
                }
                target.run(bytes)
                if verbose, let answer = target.answer(bytes) { print("\(file): \(answer)") }
                count += 1
            }
        }
        print("\(target.rawValue): \(count) inputs replayed, no finding")
    }
}
#endif
