// A short, fixed fuzzing run of every target inside `make test`: seeded mutations of the
// committed corpus (bit flips, interesting values, insertions, deletions, repeats, splices),
// a fixed number per target, so a regression that the corpus alone misses still fails CI and
// the run is the same on every machine. libFuzzer itself runs in `make fuzz` (coverage-guided,
// for as long as asked); this is its cheap, deterministic companion.
//
// Before each input runs it is written to .build/fuzz-smoke/<target>.input, so a trap leaves
// its reproducer: `swift run StageFuzz <target> .build/fuzz-smoke/<target>.input`.
// FUZZ_SMOKE_SEED=N and FUZZ_SMOKE_RUNS=N change the run.
import Foundation
@testable import FuzzTargets
import TestSupport
import Testing

struct MutationRunTests {
    static let runs = ProcessInfo.processInfo.environment["FUZZ_SMOKE_RUNS"].flatMap(Int.init) ?? 1000
    static let seed = ProcessInfo.processInfo.environment["FUZZ_SMOKE_SEED"].flatMap(UInt64.init) ?? 2026_11_26

    @Test("seeded mutations of each corpus run through their target with no trap and no bound broken",
          arguments: FuzzTarget.allCases)
    func mutationRun(_ target: FuzzTarget) throws {
        let directory = FuzzSeeds.corpusRoot.appendingPathComponent(target.rawValue)
        let corpus = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
            .map { [UInt8](try Data(contentsOf: directory.appendingPathComponent($0))) }
        try #require(!corpus.isEmpty)
        let scratch = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/fuzz-smoke")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let current = scratch.appendingPathComponent("\(target.rawValue).input")
        print("fuzz smoke \(target.rawValue): seed \(Self.seed), \(Self.runs) runs; a trap leaves its input in \(current.path)")
        var generator = SeededGenerator(seed: Self.seed &+ UInt64(FuzzTarget.allCases.firstIndex(of: target) ?? 0))
        let mutator = Mutator()
        for _ in 0..<Self.runs {
            let base = corpus[Int.random(in: 0..<corpus.count, using: &generator)]
            let other = corpus[Int.random(in: 0..<corpus.count, using: &generator)]
            let input = mutator.mutate(base, splicingWith: other, using: &generator)
            try Data(input).write(to: current)
            target.run(input)
        }
    }

    @Test("the mutator is deterministic for a seed and changes its inputs")
    func mutatorIsSeeded() {
        let input = [UInt8](0..<200)
        var first = SeededGenerator(seed: 7), second = SeededGenerator(seed: 7)
        let mutator = Mutator()
        let a = (0..<20).map { _ in mutator.mutate(input, splicingWith: input.reversed(), using: &first) }
        let b = (0..<20).map { _ in mutator.mutate(input, splicingWith: input.reversed(), using: &second) }
        #expect(a == b)
        #expect(a.filter { $0 != input }.count >= 18)
    }
}

/// libFuzzer's simple mutations, in Swift: 1 to 4 of them per input, never longer than 64 KiB.
struct Mutator {
    static let interesting: [UInt8] = [0, 1, 0x7F, 0x80, 0xFF, 0xFE, 0x40, 0x10]
    static let maxLength = 65_536

    func mutate(_ input: [UInt8], splicingWith other: [UInt8], using generator: inout SeededGenerator) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &generator)
            switch Int.random(in: 0..<7, using: &generator) {
            case 0 where !bytes.isEmpty:
                bytes[position] ^= 1 << UInt8.random(in: 0..<8, using: &generator)
            case 1 where !bytes.isEmpty:
                bytes[position] = Self.interesting.randomElement(using: &generator) ?? 0
            case 2:
                let count = Int.random(in: 1...16, using: &generator)
                bytes.insert(contentsOf: (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }, at: position)
            case 3 where !bytes.isEmpty:
                bytes.removeSubrange(position..<min(bytes.count, position + Int.random(in: 1...64, using: &generator)))
            case 4 where !bytes.isEmpty:
                // A repeated run: what floods are made of.
                let end = min(bytes.count, position + Int.random(in: 1...64, using: &generator))
                let run = Array(bytes[position..<end])
                for _ in 0..<Int.random(in: 1...32, using: &generator) { bytes.insert(contentsOf: run, at: end) }
            case 5 where !other.isEmpty:
                let start = Int.random(in: 0..<other.count, using: &generator)
                bytes = Array(bytes[..<position]) + Array(other[start...])
            case 6 where bytes.count >= 2:
                // A big-endian field set to an edge value (lengths, timestamps, sequence numbers).
                let index = min(position, bytes.count - 2)
                let value: UInt16 = [0, 1, 0x7FFF, 0x8000, 0xFFFF].randomElement(using: &generator) ?? 0
                bytes[index] = UInt8(value >> 8)
                bytes[index + 1] = UInt8(truncatingIfNeeded: value)
            default:
                bytes.append(UInt8.random(in: 0...255, using: &generator))
            }
            if bytes.count > Self.maxLength { bytes.removeLast(bytes.count - Self.maxLength) }
        }
        return bytes
    }
}
