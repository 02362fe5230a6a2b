// Test-only helpers: a seeded generator, hex byte vectors, and packet builders.
@testable import WebRTCMedia

/// SplitMix64: tiny, seedable, and the same on every platform.
struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func hex(_ text: String) -> [UInt8] {
    let digits = text.filter { $0.isHexDigit }
    var bytes: [UInt8] = []
    var index = digits.startIndex
    while index < digits.endIndex {
        let next = digits.index(index, offsetBy: 2)
        bytes.append(UInt8(digits[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

func hexString(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}

func randomBytes(_ count: Int, using generator: inout SeededGenerator) -> [UInt8] {
    (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
}

/// Frames out of a depacketizer's events.
func frames(_ events: [DepacketizerEvent]) -> [EncodedFrame] {
    events.compactMap { if case .frame(let frame) = $0 { frame } else { nil } }
}

func discards(_ events: [DepacketizerEvent]) -> [DepacketizerDiscard] {
    events.compactMap { if case .discarded(let reason) = $0 { reason } else { nil } }
}
