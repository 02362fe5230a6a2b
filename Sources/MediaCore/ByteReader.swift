// Big-endian reads over bytes for every wire parser (RTMP chunks, AMF0, FLV tags, RTP, RTCP,
// STUN) and the matching writes. Every read returns nil instead of trapping when the bytes
// run out, so each parser maps that to its own error. Inlinable: parsers run per packet.

public struct ByteReader: Sendable {
    public let bytes: ArraySlice<UInt8>
    /// An index into `bytes` (for a whole array, the offset from its start).
    @inlinable public var offset: Int { position }
    @usableFromInline var position: Int

    @inlinable public init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.position = bytes.startIndex
    }

    @inlinable public init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes[...]
        self.position = offset
    }

    @inlinable public var remainingCount: Int { bytes.endIndex - offset }
    @inlinable public var isAtEnd: Bool { offset >= bytes.endIndex }

    @inlinable public mutating func readUInt8() -> UInt8? {
        guard offset >= bytes.startIndex, offset < bytes.endIndex else { return nil }
        defer { position += 1 }
        return bytes[offset]
    }

    @inlinable public mutating func readUInt16() -> UInt16? {
        readBigEndian(byteCount: 2).map { UInt16(truncatingIfNeeded: $0) }
    }

    @inlinable public mutating func readUInt24() -> UInt32? {
        readBigEndian(byteCount: 3).map { UInt32(truncatingIfNeeded: $0) }
    }

    /// A signed 24-bit value (FLV composition time), sign-extended.
    @inlinable public mutating func readInt24() -> Int32? {
        guard let raw = readUInt24() else { return nil }
        return Int32(bitPattern: raw << 8) >> 8
    }

    @inlinable public mutating func readUInt32() -> UInt32? {
        readBigEndian(byteCount: 4).map { UInt32(truncatingIfNeeded: $0) }
    }

    @inlinable public mutating func readUInt64() -> UInt64? {
        readBigEndian(byteCount: 8)
    }

    @inlinable public mutating func readBytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, count <= remainingCount, offset >= bytes.startIndex else { return nil }
        defer { position += count }
        return Array(bytes[offset..<offset + count])
    }

    @inlinable public mutating func readRemaining() -> [UInt8] {
        defer { position = bytes.endIndex }
        return offset >= bytes.startIndex && offset < bytes.endIndex ? Array(bytes[offset...]) : []
    }

    @inlinable public mutating func skip(_ count: Int) -> Bool {
        guard count >= 0, count <= remainingCount else { return false }
        position += count
        return true
    }

    @inlinable public func peekUInt8(at distance: Int = 0) -> UInt8? {
        let (index, overflow) = offset.addingReportingOverflow(distance)
        guard !overflow, index >= bytes.startIndex, index < bytes.endIndex else { return nil }
        return bytes[index]
    }

    @inlinable mutating func readBigEndian(byteCount: Int) -> UInt64? {
        guard byteCount <= remainingCount, offset >= bytes.startIndex else { return nil }
        var value: UInt64 = 0
        for index in offset..<offset + byteCount {
            value = value << 8 | UInt64(bytes[index])
        }
        position += byteCount
        return value
    }
}

extension Array where Element == UInt8 {
    @inlinable public mutating func appendBigEndian(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    @inlinable public mutating func appendBigEndian24(_ value: UInt32) {
        append(UInt8(truncatingIfNeeded: value >> 16))
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    @inlinable public mutating func appendBigEndian(_ value: UInt32) {
        append(UInt8(truncatingIfNeeded: value >> 24))
        appendBigEndian24(value)
    }

    @inlinable public mutating func appendBigEndian(_ value: UInt64) {
        appendBigEndian(UInt32(truncatingIfNeeded: value >> 32))
        appendBigEndian(UInt32(truncatingIfNeeded: value))
    }

    /// Zero bytes up to the next multiple of four (RTCP and RTP extensions are 32-bit aligned).
    @inlinable public mutating func padToWordBoundary() {
        while count % 4 != 0 { append(0) }
    }
}
