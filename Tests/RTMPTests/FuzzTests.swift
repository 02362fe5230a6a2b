// Seeded mutation fuzzing of the whole server session with the corpus: it must never trap,
// and what it holds must stay within the configured limits. Deterministic: a failure
// names the shard and iteration, whose input the shard's seed rebuilds.
@testable import FuzzTargets
@testable import RTMP
import TestSupport
import Testing

struct FuzzTests {
    /// The rtmp-parsers fuzz target's small limits (so the bounds are actually reached), its
    /// memory bound, and its cheap keyed hash standing in for HMAC-SHA256 (the fuzz is about
    /// parsing, and the real digest would make 20 000 debug-mode handshakes take minutes).
    static let limits = FuzzTargets.limits
    static let memoryBound = FuzzTargets.memoryBound
    static let fastHMAC = FuzzTargets.fastHMAC

    /// 4 × 5 000 iterations; the shards run in parallel.
    @Test("20 000 seeded mutations of the corpus: no trap, bounded memory, sane actions", arguments: 0..<4)
    func mutationFuzz(shard: Int) throws {
        let corpus = try Corpus.all().map(\.bytes)
        #expect(corpus.count >= 4)
        var generator = SeededGenerator(seed: 0x5EED_2026 &+ UInt64(shard))
        var closes = 0, media = 0, publishes = 0
        for iteration in (shard * 5000)..<((shard + 1) * 5000) {
            var input = corpus[Int.random(in: 0..<corpus.count, using: &generator)]
            let mutations = Int.random(in: 1...4, using: &generator)
            for _ in 0..<mutations {
                mutate(&input, corpus: corpus, using: &generator)
            }
            var session = RTMPServerSession(limits: Self.limits, hmacSHA256: Self.fastHMAC, random: seededRandomFill(UInt64(iteration)))
            // Byte-at-a-time reads are slow in debug builds and covered elsewhere; keep them rare.
            let maxPiece = iteration % 100 == 0 ? 1 : [64, 512, 4096, 70_000][Int.random(in: 0..<4, using: &generator)]
            for piece in randomSplits(input, maxPiece: maxPiece, using: &generator) {
                var actions = session.receive(piece)
                for action in actions {
                    switch action {
                    case .publishRequested:
                        publishes += 1
                        switch Int.random(in: 0..<3, using: &generator) {
                        case 0: actions += session.acceptPublish()
                        case 1: actions += session.rejectPublish(code: "NetStream.Publish.BadName", description: "no")
                        default: break  // decide later, or never
                        }
                    default:
                        break
                    }
                }
                for action in actions {
                    switch action {
                    case .media(let message):
                        media += 1
                        parseAsTheOwnerWould(message)
                    case .close:
                        closes += 1
                    default:
                        break
                    }
                }
                guard session.bufferedByteCount <= Self.memoryBound else {
                    Issue.record("iteration \(iteration): \(session.bufferedByteCount) bytes held")
                    return
                }
                if session.isClosed { break }
            }
        }
        // The mutations leave enough intact that every path is exercised.
        #expect(closes > 250 && media > 250 && publishes > 250)
    }

    /// What the NIO shell does with media: parse the tag, and the configuration records.
    private func parseAsTheOwnerWould(_ message: RTMPMediaMessage) { FuzzTargets.parseMedia(message) }

    private func mutate(_ input: inout [UInt8], corpus: [[UInt8]], using generator: inout SeededGenerator) {
        guard !input.isEmpty else { return }
        // Mostly after the handshake, where the chunk stream and commands are.
        let position = input.count > 3073 && Int.random(in: 0..<5, using: &generator) > 0
            ? Int.random(in: 3073..<input.count, using: &generator)
            : Int.random(in: 0..<input.count, using: &generator)
        switch Int.random(in: 0..<9, using: &generator) {
        case 0:  // bit flip
            input[position] ^= 1 << UInt8.random(in: 0...7, using: &generator)
        case 1:  // random byte
            input[position] = UInt8.random(in: 0...255, using: &generator)
        case 2:  // insertion
            let inserted = (0..<Int.random(in: 1...16, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            input.insert(contentsOf: inserted, at: position)
        case 3:  // deletion
            input.removeSubrange(position..<min(input.count, position + Int.random(in: 1...64, using: &generator)))
        case 4:  // a 24-bit length or timestamp field set to an extreme
            let extreme: [UInt8] = [[0xFF, 0xFF, 0xFF], [0x00, 0x00, 0x00], [0x7F, 0xFF, 0xFF], [0x00, 0x80, 0x01]].randomElement(using: &generator)!
            for (offset, byte) in extreme.enumerated() where position + offset < input.count { input[position + offset] = byte }
        case 5:  // a Set Chunk Size message with a hostile size
            let size: [UInt8] = [[0, 0, 0, 1], [0x7F, 0xFF, 0xFF, 0xFF], [0x80, 0, 0, 0], [0, 0, 0x20, 0x00], [0, 0, 0, 0]].randomElement(using: &generator)!
            input.insert(contentsOf: hex("02 000000 000004 01 00000000") + size, at: position)
        case 6:  // truncation
            input.removeSubrange(position...)
        case 7:  // splice: our prefix, another session's suffix
            let other = corpus.randomElement(using: &generator)!
            let cut = Int.random(in: 0..<other.count, using: &generator)
            input = Array(input[..<position]) + other[cut...]
        default:  // duplicate a range (replayed chunks)
            let end = min(input.count, position + Int.random(in: 1...300, using: &generator))
            input.insert(contentsOf: input[position..<end], at: end)
        }
    }
}
