// AMF0: exact bytes, round trips, and every way untrusted input can be wrong.
@testable import RTMP
import TestSupport
import Testing

struct AMF0Tests {
    /// The connect command FFmpeg 5.1 sends when publishing to rtmp://127.0.0.1:41781/live,
    /// written out from the AMF0 specification (marker, big-endian length, UTF-8 bytes).
    static let ffmpegConnect: [UInt8] = hex("""
        02 0007 636f6e6e656374
        00 3ff0000000000000
        03
           0003 617070 02 0004 6c697665
           0004 74797065 02 000a 6e6f6e70726976617465
           0008 666c61736856657202 0024 464d4c452f332e302028636f6d70617469626c653b204c61766635392e32372e31303029
           0005 746355726c 02 001b 72746d703a2f2f3132372e302e302e313a34313738312f6c697665
        000009
        """)

    static let ffmpegConnectValues: [AMF0Value] = [
        .string("connect"), .number(1),
        .object([AMF0Property("app", .string("live")), AMF0Property("type", .string("nonprivate")),
                 AMF0Property("flashVer", .string("FMLE/3.0 (compatible; Lavf59.27.100)")),
                 AMF0Property("tcUrl", .string("rtmp://127.0.0.1:41781/live"))]),
    ]

    @Test("FFmpeg's connect command decodes to the expected values and encodes back byte for byte")
    func ffmpegConnectVector() throws {
        #expect(try AMF0Decoder.decodeAll(Self.ffmpegConnect) == Self.ffmpegConnectValues)
        #expect(AMF0Encoder.encode(Self.ffmpegConnectValues) == Self.ffmpegConnect)
        let command = try AMF0Decoder.decodeAll(Self.ffmpegConnect)
        #expect(command[2]["tcUrl"]?.stringValue == "rtmp://127.0.0.1:41781/live")
        #expect(command[2]["missing"] == nil)
        #expect(command[1].numberValue == 1)
    }

    @Test("each scalar type has its exact encoding")
    func scalarVectors() {
        #expect(AMF0Encoder.encode([.number(1.5)]) == hex("00 3ff8000000000000"))
        #expect(AMF0Encoder.encode([.boolean(true), .boolean(false)]) == hex("01 01 01 00"))
        #expect(AMF0Encoder.encode([.string("")]) == hex("02 0000"))
        #expect(AMF0Encoder.encode([.null, .undefined]) == hex("05 06"))
        #expect(AMF0Encoder.encode([.date(milliseconds: 1_000, timeZone: -60)]) == hex("0b 408f400000000000 ffc4"))
        #expect(AMF0Encoder.encode([.longString("ab")]) == hex("0c 00000002 6162"))
        #expect(AMF0Encoder.encode([.strictArray([.number(0), .null])]) == hex("0a 00000002 00 0000000000000000 05"))
        #expect(AMF0Encoder.encode([.ecmaArray([AMF0Property("a", .boolean(true))])]) == hex("08 00000001 0001 61 01 01 000009"))
    }

    @Test("a string over 65535 UTF-8 bytes is written as a long string and reads back equal")
    func longStringPromotion() throws {
        let text = String(repeating: "é", count: 40_000)  // 80 000 bytes
        let bytes = AMF0Encoder.encode([.string(text)])
        #expect(bytes[0] == 0x0C)
        let decoded = try AMF0Decoder.decodeAll(bytes, limits: AMF0Limits(maxStringBytes: 100_000))
        #expect(decoded == [.longString(text)])
        #expect(decoded[0].stringValue == text)
    }

    @Test("nested values of every kind round-trip")
    func roundTrip() throws {
        let values: [AMF0Value] = [
            .number(-0.25), .number(Double.greatestFiniteMagnitude), .boolean(false), .string("ünïcødé ✓"),
            .object([AMF0Property("", .string("empty key")), AMF0Property("nested", .object([AMF0Property("x", .null)]))]),
            .ecmaArray([AMF0Property("duration", .number(0)), AMF0Property("list", .strictArray([.undefined, .string("a")]))]),
            .strictArray([]), .object([]), .ecmaArray([]),
            .date(milliseconds: 1_700_000_000_000, timeZone: 0), .longString(""), .null, .undefined,
        ]
        #expect(try AMF0Decoder.decodeAll(AMF0Encoder.encode(values)) == values)
    }

    @Test("seeded random value trees round-trip")
    func randomRoundTrips() throws {
        var generator = SeededGenerator(seed: 0xA3F0)
        for _ in 0..<300 {
            let values = (0..<Int.random(in: 1...4, using: &generator)).map { _ in randomValue(depth: 0, using: &generator) }
            #expect(try AMF0Decoder.decodeAll(AMF0Encoder.encode(values)) == values)
        }
    }

    private func randomValue(depth: Int, using generator: inout SeededGenerator) -> AMF0Value {
        let kinds = depth >= 4 ? 7 : 10
        switch Int.random(in: 0..<kinds, using: &generator) {
        case 0: return .number(Double(Int.random(in: -1_000_000...1_000_000, using: &generator)) / 8)
        case 1: return .boolean(Bool.random(using: &generator))
        case 2: return .string(String(repeating: "k", count: Int.random(in: 0...20, using: &generator)))
        case 3: return .null
        case 4: return .undefined
        case 5: return .date(milliseconds: Double(Int.random(in: 0...1 << 40, using: &generator)), timeZone: Int16.random(in: -720...720, using: &generator))
        case 6: return .longString("long")
        case 7: return .object(randomProperties(depth: depth, using: &generator))
        case 8: return .ecmaArray(randomProperties(depth: depth, using: &generator))
        default: return .strictArray((0..<Int.random(in: 0...4, using: &generator)).map { _ in randomValue(depth: depth + 1, using: &generator) })
        }
    }

    private func randomProperties(depth: Int, using generator: inout SeededGenerator) -> [AMF0Property] {
        (0..<Int.random(in: 0...4, using: &generator)).map { index in
            AMF0Property("key\(index)", randomValue(depth: depth + 1, using: &generator))
        }
    }

    @Test("cutting FFmpeg's connect command at any byte gives .truncated, never a crash")
    func truncationAtEveryPosition() throws {
        // Cuts between top-level values (after "connect" and after 1.0) are shorter commands.
        let valueBoundaries = [10: 1, 19: 2]
        for length in 1..<Self.ffmpegConnect.count {
            let prefix = Array(Self.ffmpegConnect.prefix(length))
            if let valueCount = valueBoundaries[length] {
                #expect(try AMF0Decoder.decodeAll(prefix) == Array(Self.ffmpegConnectValues.prefix(valueCount)))
            } else {
                #expect(throws: AMF0Error.truncated, "length \(length)") { try AMF0Decoder.decodeAll(prefix) }
            }
        }
        #expect(try AMF0Decoder.decodeAll([]) == [])
    }

    @Test("an ECMA array's count is a hint: the end marker decides, whether the count is too high or too low")
    func lyingEcmaCounts() throws {
        let tooHigh = hex("08 00000005 0001 61 05 0001 62 05 000009")
        let tooLow = hex("08 00000000 0001 61 05 0001 62 05 0001 63 05 000009")
        #expect(try AMF0Decoder.decodeAll(tooHigh) == [.ecmaArray([AMF0Property("a", .null), AMF0Property("b", .null)])])
        #expect(try AMF0Decoder.decodeAll(tooLow).first?.properties?.count == 3)
        // A huge count allocates nothing and still needs the end marker.
        #expect(throws: AMF0Error.truncated) { try AMF0Decoder.decodeAll(hex("08 ffffffff 0001 61 05")) }
    }

    @Test("a strict array count beyond the element limit fails before reading elements")
    func strictArrayCount() throws {
        #expect(throws: AMF0Error.tooManyElements) { try AMF0Decoder.decodeAll(hex("0a ffffffff")) }
        #expect(throws: AMF0Error.truncated) { try AMF0Decoder.decodeAll(hex("0a 00000400 05")) }
        let limits = AMF0Limits(maxContainerElements: 2)
        #expect(throws: AMF0Error.tooManyElements) { try AMF0Decoder.decodeAll(hex("0a 00000003 05 05 05"), limits: limits) }
        #expect(throws: AMF0Error.tooManyElements) {
            try AMF0Decoder.decodeAll(hex("03 0001 61 05 0001 62 05 0001 63 05 000009"), limits: limits)
        }
        #expect(try AMF0Decoder.decodeAll(hex("03 0001 61 05 0001 62 05 000009"), limits: limits).count == 1)
    }

    @Test("nesting deeper than the limit is refused: a 100 000-level bomb costs no stack")
    func nestingBomb() {
        let bomb = repeated(hex("0a 00000001"), 100_000)
        #expect(throws: AMF0Error.tooDeep) { try AMF0Decoder.decodeAll(bomb) }
        let objects = repeated(hex("03 0001 61"), 17) + [0x05]
        #expect(throws: AMF0Error.tooDeep) { try AMF0Decoder.decodeAll(objects) }
        // Exactly at the limit is fine: 16 containers deep.
        let atLimit = repeated(hex("0a 00000001"), 16) + [0x05]
        #expect(throws: Never.self) { try AMF0Decoder.decodeAll(atLimit) }
    }

    @Test("the total value count is limited across a whole command")
    func valueCountLimit() throws {
        let values = Array(repeating: AMF0Value.null, count: 11)
        let bytes = AMF0Encoder.encode(values)
        #expect(throws: AMF0Error.tooManyValues) { try AMF0Decoder.decodeAll(bytes, limits: AMF0Limits(maxValueCount: 10)) }
        #expect(try AMF0Decoder.decodeAll(bytes, limits: AMF0Limits(maxValueCount: 11)).count == 11)
    }

    @Test("string limits, invalid UTF-8, unknown and unsupported markers")
    func errorCases() {
        #expect(throws: AMF0Error.stringTooLong(70_000)) { try AMF0Decoder.decodeAll(hex("0c 00011170")) }
        #expect(throws: AMF0Error.stringTooLong(3)) { try AMF0Decoder.decodeAll(hex("02 0003 616263"), limits: AMF0Limits(maxStringBytes: 2)) }
        #expect(throws: AMF0Error.invalidUTF8) { try AMF0Decoder.decodeAll(hex("02 0002 c328")) }
        #expect(throws: AMF0Error.invalidUTF8) { try AMF0Decoder.decodeAll(hex("03 0001 ff 05 000009")) }
        #expect(throws: AMF0Error.unknownMarker(0x12)) { try AMF0Decoder.decodeAll([0x12]) }
        #expect(throws: AMF0Error.unknownMarker(0xFF)) { try AMF0Decoder.decodeAll([0xFF]) }
        #expect(throws: AMF0Error.unexpectedObjectEnd) { try AMF0Decoder.decodeAll([0x09]) }
        #expect(throws: AMF0Error.unexpectedObjectEnd) { try AMF0Decoder.decodeAll(hex("03 0001 61 09")) }
        for marker: UInt8 in [0x04, 0x07, 0x0D, 0x0E, 0x0F, 0x10, 0x11] {
            #expect(throws: AMF0Error.unsupported(marker: marker)) { try AMF0Decoder.decodeAll([marker, 0, 1]) }
        }
        // A reference inside an object, as a Flash encoder would write a repeated object.
        #expect(throws: AMF0Error.unsupported(marker: 0x07)) { try AMF0Decoder.decodeAll(hex("03 0001 61 07 0000 000009")) }
    }

    @Test("decodeNext walks values one at a time and reports its offset")
    func incremental() throws {
        var decoder = AMF0Decoder(hex("05 01 01 02 0001 7a"))
        #expect(try decoder.decodeNext() == .null)
        #expect(decoder.offset == 1)
        #expect(try decoder.decodeNext() == .boolean(true))
        #expect(try decoder.decodeNext()?.stringValue == "z")
        #expect(decoder.isAtEnd)
        #expect(try decoder.decodeNext() == nil)
    }

    @Test("accessors answer only for their own kinds")
    func accessors() {
        let object = AMF0Value.object([AMF0Property("a", .number(1)), AMF0Property("a", .number(2))])
        #expect(object["a"] == .number(1))
        #expect(AMF0Value.number(3)["a"] == nil)
        #expect(AMF0Value.number(3).stringValue == nil)
        #expect(AMF0Value.string("x").numberValue == nil)
        #expect(AMF0Value.longString("x").stringValue == "x")
        #expect(AMF0Value.boolean(true).booleanValue == true)
        #expect(AMF0Value.strictArray([]).properties == nil)
    }
}
