// Deterministic randomness, hex byte vectors and the hashes tests inject into the pure
// protocol modules (which take their crypto as closures).
import Crypto

/// SplitMix64: tiny, seedable, and the same on every platform.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Bytes from hex text; anything but hex digits (spaces, newlines of pasted RFC dumps) is ignored.
public func hex(_ text: String) -> [UInt8] {
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

/// The same, named for call sites that read better that way.
public func bytes(hex text: String) -> [UInt8] { hex(text) }

/// Lowercase hex of `bytes`.
public func hexString(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}

public func hex(_ bytes: [UInt8]) -> String { hexString(bytes) }

public func sha256(_ message: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: message)) }

/// HMAC-SHA256 (RTMP's digest handshake), as the RTMP module takes it.
public let testHMACSHA256: @Sendable ([UInt8], [UInt8]) -> [UInt8] = { key, data in
    Array(HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: key)))
}

/// HMAC-SHA1 (STUN MESSAGE-INTEGRITY), as the WebRTC signalling module takes it.
public let testHMACSHA1: @Sendable ([UInt8], [UInt8]) -> [UInt8] = { key, data in
    Array(HMAC<Insecure.SHA1>.authenticationCode(for: data, using: SymmetricKey(data: key)))
}
