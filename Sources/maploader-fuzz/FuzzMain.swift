import Foundation
import MapLoaderFuzzing

// Built with `-sanitize=fuzzer -parse-as-library -D FUZZING` (scripts/fuzz.sh) this is a
// libFuzzer target chosen by $FUZZ_TARGET, and libFuzzer brings `main`. Built normally it
// replays input files: maploader-fuzz <target> <file-or-folder>...

/// A scratch folder for targets that need files.
let scratch: URL = {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("maploader-fuzz-\(getpid())")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}()

#if FUZZING
    /// The target named by $FUZZ_TARGET.
    let selected: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            fatalError("set FUZZ_TARGET to one of \(FuzzTarget.allCases.map(\.rawValue))")
        }
        return target
    }()

    /// libFuzzer's entry point.
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
        let data = start.map { Data(bytes: $0, count: count) } ?? Data()
        selected.run(data, scratch: scratch)
        return 0
    }

    /// libFuzzer's driver, for programs that keep their own `main`.
    @_silgen_name("LLVMFuzzerRunDriver")
    func runDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafeRawPointer?, Int) -> CInt
    ) -> CInt

    /// SwiftPM links an executable's `main` to `<module>_main`: hand over to libFuzzer there.
    @_cdecl("maploader_fuzz_main")
    public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        var count = argc
        var arguments = argv
        return runDriver(&count, &arguments) { fuzz($0, $1) }
    }
#else
    /// Replays files through a target.
    @main
    enum Replay {
        static func main() {
            let arguments = CommandLine.arguments.dropFirst()
            guard let name = arguments.first, let target = FuzzTarget(rawValue: name) else {
                FileHandle.standardError.write(
                    Data("usage: maploader-fuzz <\(FuzzTarget.allCases.map(\.rawValue).joined(separator: "|"))> <file-or-folder>...\n".utf8))
                exit(64)
            }
            var count = 0
            for path in arguments.dropFirst() {
                let url = URL(fileURLWithPath: path)
                let files = (try? FileManager.default.contentsOfDirectory(at: url, includingPropertiesForKeys: nil)) ?? [url]
                for file in files {
                    guard let data = try? Data(contentsOf: file) else { continue }
                    target.run(data, scratch: scratch)
                    count += 1
                }
            }
            try? FileManager.default.removeItem(at: scratch)
            print("replayed \(count) input(s) through \(name) without a crash")
        }
    }
#endif
