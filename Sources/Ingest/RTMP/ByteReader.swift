// Big-endian reads over a byte array for the parsers of this module. Every read returns nil
// instead of trapping when the bytes run out, so each layer maps that to its own error.

struct ByteReader {
    let bytes: [UInt8]
    private(set) var offset: Int

    init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    var remainingCount: Int { bytes.count - offset }
    var isAtEnd: Bool { offset >= bytes.count }

    mutating func readUInt8() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readUInt16() -> UInt16? {
        guard let value = readBigEndian(byteCount: 2) else { return nil }
        return UInt16(truncatingIfNeeded: value)
    }

    mutating func readUInt24() -> UInt32? {
        guard let value = readBigEndian(byteCount: 3) else { return nil }
        return UInt32(truncatingIfNeeded: value)
    }

    /// A signed 24-bit value (FLV composition time), sign-extended.
    mutating func readInt24() -> Int32? {
        guard let raw = readUInt24() else { return nil }
        return Int32(bitPattern: raw << 8) >> 8
    }

    mutating func readUInt32() -> UInt32? {
        guard let value = readBigEndian(byteCount: 4) else { return nil }
        return UInt32(truncatingIfNeeded: value)
    }

    mutating func readUInt64() -> UInt64? {
        readBigEndian(byteCount: 8)
    }

    mutating func readBytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, count <= remainingCount else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func readRemaining() -> [UInt8] {
        defer { offset = bytes.count }
        return offset < bytes.count ? Array(bytes[offset...]) : []
    }

    mutating func skip(_ count: Int) -> Bool {
        guard count >= 0, count <= remainingCount else { return false }
        offset += count
        return true
    }

    func peekUInt8(at distance: Int = 0) -> UInt8? {
        let index = offset + distance
        guard index >= 0, index < bytes.count else { return nil }
        return bytes[index]
    }

    private mutating func readBigEndian(byteCount: Int) -> UInt64? {
        guard byteCount <= remainingCount else { return nil }
        var value: UInt64 = 0
        for index in offset..<offset + byteCount {
            value = value << 8 | UInt64(bytes[index])
        }
        offset += byteCount
        return value
    }
}

extension Array where Element == UInt8 {
    mutating func appendBigEndian(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    mutating func appendBigEndian24(_ value: UInt32) {
        append(UInt8(truncatingIfNeeded: value >> 16))
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    mutating func appendBigEndian(_ value: UInt32) {
        append(UInt8(truncatingIfNeeded: value >> 24))
        appendBigEndian24(value)
    }

    mutating func appendBigEndian(_ value: UInt64) {
        appendBigEndian(UInt32(truncatingIfNeeded: value >> 32))
        appendBigEndian(UInt32(truncatingIfNeeded: value))
    }
}
