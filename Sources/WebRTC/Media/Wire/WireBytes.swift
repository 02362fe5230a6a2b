// Big-endian reads and writes for the RTP/RTCP codecs. Reads return nil instead of trapping
// when the bytes run out, so each parser maps that to its own error.

struct WireReader {
    let bytes: ArraySlice<UInt8>
    private(set) var offset: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.offset = bytes.startIndex
    }

    init(_ bytes: [UInt8]) { self.init(bytes[...]) }

    var remainingCount: Int { bytes.endIndex - offset }
    var isAtEnd: Bool { offset >= bytes.endIndex }

    mutating func readUInt8() -> UInt8? {
        guard offset < bytes.endIndex else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readUInt16() -> UInt16? {
        readBigEndian(byteCount: 2).map { UInt16(truncatingIfNeeded: $0) }
    }

    mutating func readUInt24() -> UInt32? {
        readBigEndian(byteCount: 3).map { UInt32(truncatingIfNeeded: $0) }
    }

    mutating func readUInt32() -> UInt32? {
        readBigEndian(byteCount: 4).map { UInt32(truncatingIfNeeded: $0) }
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
        defer { offset = bytes.endIndex }
        return Array(bytes[offset...])
    }

    mutating func skip(_ count: Int) -> Bool {
        guard count >= 0, count <= remainingCount else { return false }
        offset += count
        return true
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
    mutating func appendWire(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    mutating func appendWire24(_ value: UInt32) {
        append(UInt8(truncatingIfNeeded: value >> 16))
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    mutating func appendWire(_ value: UInt32) {
        append(UInt8(truncatingIfNeeded: value >> 24))
        appendWire24(value)
    }

    mutating func appendWire(_ value: UInt64) {
        appendWire(UInt32(truncatingIfNeeded: value >> 32))
        appendWire(UInt32(truncatingIfNeeded: value))
    }

    /// Zero bytes up to the next multiple of four (RTCP and RTP extensions are 32-bit aligned).
    mutating func padToWordBoundary() {
        while count % 4 != 0 { append(0) }
    }
}
