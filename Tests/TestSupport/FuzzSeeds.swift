// Seed inputs of the fuzz targets (Sources/Fuzz), made by the tests of the module each one
// fuzzes and kept in Tests/FuzzTests/Corpus/<target>/seed-*.bin next to what the fuzzer
// found (hash-named files). A seed test checks the files are still what its generator
// makes; FUZZ_REGENERATE_SEEDS=1 rewrites them.
import Foundation

public enum FuzzSeeds {
    public static let corpusRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("FuzzTests/Corpus")

    /// The differences between `seeds` and the committed seed files of `target` (empty when
    /// current), after rewriting the files first when FUZZ_REGENERATE_SEEDS=1.
    public static func staleSeeds(target: String, seeds: [(name: String, bytes: [UInt8])]) throws -> [String] {
        let directory = corpusRoot.appendingPathComponent(target)
        let manager = FileManager.default
        if ProcessInfo.processInfo.environment["FUZZ_REGENERATE_SEEDS"] == "1" {
            try manager.createDirectory(at: directory, withIntermediateDirectories: true)
            for old in try manager.contentsOfDirectory(atPath: directory.path) where old.hasPrefix("seed-") {
                try manager.removeItem(at: directory.appendingPathComponent(old))
            }
            for seed in seeds { try Data(seed.bytes).write(to: directory.appendingPathComponent("seed-\(seed.name).bin")) }
        }
        var problems: [String] = []
        let committed = Set(((try? manager.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasPrefix("seed-") })
        for seed in seeds {
            let name = "seed-\(seed.name).bin"
            let data = manager.contents(atPath: directory.appendingPathComponent(name).path)
            if data.map([UInt8].init) != seed.bytes { problems.append("\(target)/\(name) is missing or stale") }
        }
        let expected = Set(seeds.map { "seed-\($0.name).bin" })
        for extra in committed.subtracting(expected).sorted() { problems.append("\(target)/\(extra) is no longer generated") }
        return problems
    }
}
