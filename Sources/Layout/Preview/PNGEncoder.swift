// A small pure-Swift PNG writer for layout previews: 8-bit RGB, filter None, one IDAT
// holding a zlib stream compressed with fixed-Huffman deflate (LZ77 matches against the
// previous pixel, the pixel above and a 3-byte hash), which is plenty for flat tiles.

import MediaCore

public enum PNGEncoder {
    public static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Encodes `rgb` (`width * height * 3` bytes, rows top to bottom) as a PNG file.
    public static func encodeRGB(width: Int, height: Int, rgb: [UInt8]) -> [UInt8] {
        precondition(width > 0 && height > 0 && rgb.count == width * height * 3, "RGB buffer size mismatch")
        let rowBytes = width * 3
        var raw = [UInt8]()
        raw.reserveCapacity((rowBytes + 1) * height)
        for row in 0..<height {
            raw.append(0) // filter type None
            raw.append(contentsOf: rgb[(row * rowBytes)..<((row + 1) * rowBytes)])
        }
        var header = [UInt8]()
        header.appendBigEndian(UInt32(width))
        header.appendBigEndian(UInt32(height))
        header += [8, 2, 0, 0, 0] // bit depth 8, colour type RGB, deflate, adaptive filters, no interlace

        var png = signature
        appendChunk("IHDR", header, to: &png)
        appendChunk("IDAT", Zlib.compress(raw, pixelBytes: 3, rowBytes: rowBytes + 1), to: &png)
        appendChunk("IEND", [], to: &png)
        return png
    }

    private static func appendChunk(_ type: String, _ data: [UInt8], to png: inout [UInt8]) {
        png.appendBigEndian(UInt32(data.count))
        let typeBytes = Array(type.utf8)
        png += typeBytes
        png += data
        png.appendBigEndian(CRC32.checksum(typeBytes + data))
    }
}

/// CRC-32 (ISO-HDLC, as in PNG and gzip).
public enum CRC32 {
    static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 != 0 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}

/// Adler-32 (zlib trailer).
public enum Adler32 {
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        var pending = 0
        for byte in bytes {
            a += UInt32(byte)
            b += a
            pending += 1
            if pending == 5552 { a %= 65521; b %= 65521; pending = 0 }
        }
        return ((b % 65521) << 16) | (a % 65521)
    }
}

enum Zlib {
    /// A zlib stream (RFC 1950) of one final fixed-Huffman deflate block (RFC 1951).
    static func compress(_ data: [UInt8], pixelBytes: Int, rowBytes: Int) -> [UInt8] {
        var writer = BitWriter()
        writer.bytes = [0x78, 0x01] // deflate, 32K window; (0x7801 % 31 == 0)
        writer.write(1, bits: 1) // BFINAL
        writer.write(1, bits: 2) // BTYPE = fixed Huffman
        Deflate.encodeFixed(data, pixelBytes: pixelBytes, rowBytes: rowBytes, into: &writer)
        writer.flush()
        writer.bytes.appendBigEndian(Adler32.checksum(data))
        return writer.bytes
    }
}

struct BitWriter {
    var bytes: [UInt8] = []
    private var buffer: UInt64 = 0
    private var count = 0

    /// Appends the low `bits` bits of `value`, least significant first (deflate bit order).
    mutating func write(_ value: Int, bits: Int) {
        buffer |= UInt64(value & ((1 << bits) - 1)) << UInt64(count)
        count += bits
        while count >= 8 {
            bytes.append(UInt8(truncatingIfNeeded: buffer))
            buffer >>= 8
            count -= 8
        }
    }

    /// Appends a Huffman code, which deflate stores most significant bit first.
    mutating func writeCode(_ code: Int, bits: Int) {
        var reversed = 0
        for bit in 0..<bits where code & (1 << bit) != 0 { reversed |= 1 << (bits - 1 - bit) }
        write(reversed, bits: bits)
    }

    mutating func flush() {
        if count > 0 { bytes.append(UInt8(truncatingIfNeeded: buffer)) }
        buffer = 0
        count = 0
    }
}

enum Deflate {
    static let lengthBases = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115,
                              131, 163, 195, 227, 258]
    static let lengthExtraBits = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    static let distanceBases = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025,
                                1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
    static let distanceExtraBits = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11,
                                    12, 12, 13, 13]
    static let window = 32768
    static let maxMatch = 258
    static let minMatch = 3

    static func encodeFixed(_ data: [UInt8], pixelBytes: Int, rowBytes: Int, into writer: inout BitWriter) {
        let hashSize = 1 << 15
        var lastPosition = [Int](repeating: -1, count: hashSize)
        func hash(_ position: Int) -> Int {
            (Int(data[position]) << 10 ^ Int(data[position + 1]) << 5 ^ Int(data[position + 2])) & (hashSize - 1)
        }
        func matchLength(_ position: Int, _ candidate: Int) -> Int {
            let limit = min(maxMatch, data.count - position)
            var length = 0
            while length < limit, data[candidate + length] == data[position + length] { length += 1 }
            return length
        }
        var position = 0
        while position < data.count {
            var bestLength = 0, bestDistance = 0
            if position + minMatch <= data.count {
                let key = hash(position)
                for option in 0..<3 {
                    let candidate = option == 0 ? lastPosition[key] : position - (option == 1 ? pixelBytes : rowBytes)
                    guard candidate >= 0, candidate < position, position - candidate <= window else { continue }
                    let length = matchLength(position, candidate)
                    if length > bestLength { (bestLength, bestDistance) = (length, position - candidate) }
                }
                lastPosition[key] = position
            }
            if bestLength >= minMatch {
                writeLength(bestLength, into: &writer)
                writeDistance(bestDistance, into: &writer)
                // Index the skipped positions too, so later rows can find them.
                var skipped = position + 1
                while skipped < position + bestLength, skipped + minMatch <= data.count {
                    lastPosition[hash(skipped)] = skipped
                    skipped += 1
                }
                position += bestLength
            } else {
                writeLiteral(Int(data[position]), into: &writer)
                position += 1
            }
        }
        writeLiteral(256, into: &writer) // end of block
    }

    /// Fixed literal/length code (RFC 1951 §3.2.6).
    static func writeLiteral(_ symbol: Int, into writer: inout BitWriter) {
        switch symbol {
        case 0...143: writer.writeCode(0x30 + symbol, bits: 8)
        case 144...255: writer.writeCode(0x190 + symbol - 144, bits: 9)
        case 256...279: writer.writeCode(symbol - 256, bits: 7)
        default: writer.writeCode(0xC0 + symbol - 280, bits: 8)
        }
    }

    static func writeLength(_ length: Int, into writer: inout BitWriter) {
        var index = lengthBases.count - 1
        while lengthBases[index] > length { index -= 1 }
        writeLiteral(257 + index, into: &writer)
        if lengthExtraBits[index] > 0 { writer.write(length - lengthBases[index], bits: lengthExtraBits[index]) }
    }

    static func writeDistance(_ distance: Int, into writer: inout BitWriter) {
        var index = distanceBases.count - 1
        while distanceBases[index] > distance { index -= 1 }
        writer.writeCode(index, bits: 5)
        if distanceExtraBits[index] > 0 { writer.write(distance - distanceBases[index], bits: distanceExtraBits[index]) }
    }
}
