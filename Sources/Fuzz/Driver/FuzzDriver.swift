// The fuzz driver: one executable for every FuzzTarget, chosen by FUZZ_TARGET.
//
// Built with -DFUZZING and -sanitize=fuzzer,address (`make fuzz`), it is a libFuzzer binary:
//   FUZZ_TARGET=rtmp-session .build-fuzz/release/StageFuzz <scratch dir> Tests/FuzzTests/Corpus/rtmp-session ...
// Built plainly, it replays files (crash reproducers, corpus entries) through a target:
//   swift run StageFuzz rtmp-session crash-<hash> ...

import FuzzTargets

#if FUZZING
import Glibc

/// The target named by FUZZ_TARGET, read once.
nonisolated(unsafe) var selectedTarget: FuzzTarget?

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let target = selectedTarget else { return 0 }
    let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    target.run(input)
    return 0
}

/// libFuzzer's driver, for the entry point below.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<CInt>,
                     _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                     _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// SwiftPM links every executable with `main` aliased to `<target>_main`; providing it here
/// (instead of libFuzzer's own `main`) hands control to libFuzzer's driver.
@_cdecl("StageFuzz_main")
public func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    guard let name = getenv("FUZZ_TARGET").map({ String(cString: $0) }), let target = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        print("set FUZZ_TARGET to one of: \(names)")
        return 2
    }
    selectedTarget = target
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments, fuzzerTestOneInput)
}
#else
import Foundation

/// Replays files (crash reproducers, corpus entries) through a target.
@main
enum ReplayInputs {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name) else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
            print("usage: StageFuzz <\(names)> <input file or directory>...")
            exit(2)
        }
        for path in arguments.dropFirst() {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            let files = isDirectory.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
                : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else {
                    print("cannot read \(file)")
                    exit(1)
                }
                let reach = target.run([UInt8](data))
                print("\(file): \(data.count) bytes, no finding (\(reach))")
            }
        }
    }
}
#endif
