// Test-only helpers for the RTMP core: deterministic handshake randomness, random splits.
// (Seeded generators, hex and the injected HMAC come from TestSupport.)
import RTMP
import TestSupport

/// A deterministic byte source for handshakes: every call fills from the same seed plus
/// the call's buffer size, so runs repeat exactly.
func seededRandomFill(_ seed: UInt64) -> RTMPRandomFill {
    { buffer in
        var generator = SeededGenerator(seed: seed &+ UInt64(buffer.count))
        var word: UInt64 = 0
        for index in buffer.indices {
            if index % 8 == 0 { word = generator.next() }
            buffer[index] = UInt8(truncatingIfNeeded: word >> UInt64(index % 8 * 8))
        }
    }
}

/// Splits `bytes` into random pieces (sizes 1...maxPiece).
func randomSplits(_ bytes: [UInt8], maxPiece: Int, using generator: inout SeededGenerator) -> [ArraySlice<UInt8>] {
    var pieces: [ArraySlice<UInt8>] = []
    var offset = 0
    while offset < bytes.count {
        let size = Int.random(in: 1...maxPiece, using: &generator)
        let end = min(bytes.count, offset + size)
        pieces.append(bytes[offset..<end])
        offset = end
    }
    return pieces
}

func repeated(_ bytes: [UInt8], _ count: Int) -> [UInt8] {
    var output: [UInt8] = []
    for _ in 0..<count { output += bytes }
    return output
}
