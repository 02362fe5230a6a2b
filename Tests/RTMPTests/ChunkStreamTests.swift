// Chunk stream: hand-written chunk bytes for every header form, the limits, and seeded
// encoder→decoder round trips.
@testable import RTMP
import TestSupport
import Testing

/// Decodes everything available.
func decodeAll(_ decoder: inout RTMPChunkDecoder, _ bytes: [UInt8]) throws(RTMPChunkError) -> [RTMPMessage] {
    decoder.append(bytes)
    var messages: [RTMPMessage] = []
    while let message = try decoder.nextMessage() { messages.append(message) }
    return messages
}

func payload(_ count: Int, seed: UInt8 = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &+ Int(seed)) }
}

struct ChunkDecoderTests {
    @Test("format 0 with a 1-byte basic header: every field, msid little-endian")
    func format0() throws {
        var decoder = RTMPChunkDecoder()
        let bytes = hex("03 000064 000005 14 01000000") + [1, 2, 3, 4, 5]
        #expect(try decodeAll(&decoder, bytes) == [
            RTMPMessage(chunkStreamID: 3, messageStreamID: 1, typeID: 20, timestamp: 100, payload: [1, 2, 3, 4, 5]),
        ])
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test("2- and 3-byte basic headers reach chunk stream IDs 64...65599")
    func basicHeaders() throws {
        var decoder = RTMPChunkDecoder()
        let cases: [([UInt8], UInt32)] = [
            (hex("00 00"), 64), (hex("00 06"), 70), (hex("00 ff"), 319),
            (hex("01 00 01"), 320), (hex("01 ff ff"), 65599), (hex("3f"), 63), (hex("02"), 2),
        ]
        for (basic, expected) in cases {
            let message = try decodeAll(&decoder, basic + hex("000000 000001 08 00000000 aa"))
            #expect(message.map(\.chunkStreamID) == [expected])
        }
    }

    @Test("formats 1, 2 and 3 reuse the previous header; deltas accumulate")
    func compressedHeaders() throws {
        var decoder = RTMPChunkDecoder()
        let bytes = hex("04 0003e8 000002 09 01000000 aaaa")  // fmt 0: ts 1000, len 2, video, msid 1
            + hex("44 000021 000001 08 bb")  // fmt 1: delta 33, len 1, audio
            + hex("84 000014 cc")  // fmt 2: delta 20
            + hex("c4 dd")  // fmt 3, new message: delta 20 again
            + hex("c4 ee")
        let messages = try decodeAll(&decoder, bytes)
        #expect(messages.map(\.timestamp) == [1000, 1033, 1053, 1073, 1093])
        #expect(messages.map(\.typeID) == [9, 8, 8, 8, 8])
        #expect(messages.map(\.messageStreamID) == [1, 1, 1, 1, 1])
        #expect(messages.map(\.payload) == [[0xaa, 0xaa], [0xbb], [0xcc], [0xdd], [0xee]])
    }

    @Test("a format 3 message after a format 0 one repeats the format 0 timestamp as its delta (RTMP 5.3.1.2.4)")
    func format3AfterFormat0() throws {
        var decoder = RTMPChunkDecoder()
        let messages = try decodeAll(&decoder, hex("05 000028 000001 08 01000000 aa c5 bb"))
        #expect(messages.map(\.timestamp) == [40, 80])
    }

    @Test("librtmp opens a chunk stream with format 1; formats 2 and 3 need a previous header")
    func freshChunkStreams() throws {
        var decoder = RTMPChunkDecoder()
        #expect(try decodeAll(&decoder, hex("42 000000 000006 04 0006 0000 0001")).first?.typeID == 4)
        var second = RTMPChunkDecoder()
        #expect(throws: RTMPChunkError.missingMessageHeader(chunkStreamID: 9)) { try decodeAll(&second, hex("89 000000")) }
        var third = RTMPChunkDecoder()
        #expect(throws: RTMPChunkError.missingMessageHeader(chunkStreamID: 9)) { try decodeAll(&third, hex("c9")) }
    }

    @Test("a message longer than the chunk size continues in format 3 chunks")
    func continuation() throws {
        var decoder = RTMPChunkDecoder()
        let body = payload(300)
        let bytes = hex("06 000000 00012c 09 01000000") + body[0..<128] + [0xc6] + body[128..<256] + [0xc6] + body[256...]
        let messages = try decodeAll(&decoder, bytes)
        #expect(messages.count == 1)
        #expect(messages.first?.payload == body)
    }

    @Test("extended timestamp on format 0, repeated on continuations (as FFmpeg writes it)")
    func extendedWithRepeats() throws {
        var decoder = RTMPChunkDecoder()
        let body = payload(200)
        let bytes = hex("06 ffffff 0000c8 09 01000000 01000000") + body[0..<128] + hex("c6 01000000") + body[128...]
        let messages = try decodeAll(&decoder, bytes)
        #expect(messages.map(\.timestamp) == [0x0100_0000])
        #expect(messages.first?.payload == body)
    }

    @Test("extended timestamp on format 0 without the field on continuations (as nginx/librtmp write it)")
    func extendedWithoutRepeats() throws {
        var decoder = RTMPChunkDecoder()
        let body = payload(200, seed: 7)
        let bytes = hex("06 ffffff 0000c8 09 01000000 01000000") + body[0..<128] + hex("c6") + body[128...]
        let messages = try decodeAll(&decoder, bytes)
        #expect(messages.first?.payload == body)
    }

    @Test("an extended field on a continuation may repeat the message timestamp instead of the delta")
    func extendedRepeatsAbsolute() throws {
        var decoder = RTMPChunkDecoder()
        _ = try decodeAll(&decoder, hex("06 000010 000001 09 01000000 aa"))  // ts 16
        let body = payload(130)
        // fmt 1 with an extended delta of 0x01000000: the message timestamp is 0x01000010.
        let bytes = hex("46 ffffff 000082 09 01000000") + body[0..<128] + hex("c6 01000010") + body[128...]
        let messages = try decodeAll(&decoder, bytes)
        #expect(messages.map(\.timestamp) == [0x0100_0010])
        #expect(messages.first?.payload == body)
    }

    @Test("extended deltas on formats 1 and 2, and a format 3 message that repeats an extended delta")
    func extendedDeltas() throws {
        var decoder = RTMPChunkDecoder()
        let bytes = hex("07 000005 000001 08 01000000 01")
            + hex("47 ffffff 000001 08 01000000 02")  // delta 0x01000000
            + hex("87 ffffff 00000010 03")  // delta 16
            + hex("c7 00000010 04")  // new message: the field repeats delta 16
        let messages = try decodeAll(&decoder, bytes)
        #expect(messages.map(\.timestamp) == [5, 0x0100_0005, 0x0100_0015, 0x0100_0025])
        #expect(messages.map(\.payload) == [[1], [2], [3], [4]])
    }

    @Test("timestamps wrap through 0xFFFFFFFF with deltas")
    func wrap() throws {
        var decoder = RTMPChunkDecoder()
        let bytes = hex("08 ffffff 000001 08 01000000 fffffff0 01") + hex("88 000020 02") + hex("c8 03")
        #expect(try decodeAll(&decoder, bytes).map(\.timestamp) == [0xFFFF_FFF0, 0x10, 0x30])
    }

    @Test("interleaved chunk streams complete in the order their last chunks arrive")
    func interleaved() throws {
        var decoder = RTMPChunkDecoder()
        let video = payload(200, seed: 1), audio = payload(150, seed: 2)
        var bytes = hex("06 000000 0000c8 09 01000000") + video[0..<128]
        bytes += hex("04 000000 000096 08 01000000") + audio[0..<128]
        bytes += hex("c6") + video[128...]
        bytes += hex("c4") + audio[128...]
        let messages = try decodeAll(&decoder, bytes)
        #expect(messages.map(\.chunkStreamID) == [6, 4])
        #expect(messages.map(\.payload) == [video, audio])
    }

    @Test("Set Chunk Size applies to the very next chunk, even within the same read")
    func chunkSizeChange() throws {
        var decoder = RTMPChunkDecoder()
        let body = payload(1000)
        let bytes = hex("02 000000 000004 01 00000000 00001000") + hex("06 000000 0003e8 09 01000000") + body
        let messages = try decodeAll(&decoder, bytes)
        #expect(messages.map(\.typeID) == [1, 9])
        #expect(messages.last?.payload == body)
        #expect(decoder.chunkSize == 4096)
        // And back down: 2-byte chunks.
        let small = try decodeAll(&decoder, hex("02 000000 000004 01 00000000 00000002 06 000000 000005 09 01000000 0102 c6 0304 c6 05"))
        #expect(small.last?.payload == [1, 2, 3, 4, 5])
    }

    @Test("Abort drops the half-received message of that chunk stream")
    func abort() throws {
        var decoder = RTMPChunkDecoder()
        let first = hex("06 000000 0000c8 09 01000000") + payload(128)
        #expect(try decodeAll(&decoder, first).isEmpty)
        #expect(decoder.bufferedByteCount == 128)
        let abort = hex("02 000000 000004 02 00000000 00000006")
        #expect(try decodeAll(&decoder, abort).map(\.typeID) == [2])
        #expect(decoder.bufferedByteCount == 0)
        // The chunk stream starts over with a new message.
        #expect(try decodeAll(&decoder, hex("06 000000 000001 09 01000000 7f")).map(\.payload) == [[0x7f]])
    }

    @Test("a zero-length message completes at its header")
    func zeroLength() throws {
        var decoder = RTMPChunkDecoder()
        #expect(try decodeAll(&decoder, hex("03 000000 000000 14 00000000")).map(\.payload) == [[]])
    }

    @Test("bytes fed one at a time decode the same as all at once")
    func oneByteAtATime() throws {
        let bytes = hex("06 ffffff 0000c8 09 01000000 01000000") + payload(128) + hex("c6 01000000") + payload(72)
            + hex("02 000000 000004 01 00000000 00000080") + hex("44 000021 000001 08 bb")
        var whole = RTMPChunkDecoder()
        let expected = try decodeAll(&whole, bytes)
        var decoder = RTMPChunkDecoder()
        var messages: [RTMPMessage] = []
        for byte in bytes {
            messages += try decodeAll(&decoder, [byte])
            #expect(decoder.bufferedByteCount <= 200 + 18)
        }
        #expect(messages == expected)
        #expect(messages.count == 3)
    }
}

struct ChunkLimitTests {
    @Test("Set Chunk Size: too large, zero, top bit set, short payload")
    func chunkSizeErrors() {
        var decoder = RTMPChunkDecoder(limits: RTMPChunkLimits(maxChunkSize: 65_536))
        #expect(throws: RTMPChunkError.chunkSizeTooLarge(65_537)) { try decodeAll(&decoder, hex("02 000000 000004 01 00000000 00010001")) }
        var zero = RTMPChunkDecoder()
        #expect(throws: RTMPChunkError.invalidChunkSize(0)) { try decodeAll(&zero, hex("02 000000 000004 01 00000000 00000000")) }
        var topBit = RTMPChunkDecoder()
        #expect(throws: RTMPChunkError.invalidChunkSize(0x8000_0080)) { try decodeAll(&topBit, hex("02 000000 000004 01 00000000 80000080")) }
        var short = RTMPChunkDecoder()
        #expect(throws: RTMPChunkError.malformedControlMessage(typeID: 1)) { try decodeAll(&short, hex("02 000000 000002 01 00000000 0010")) }
        var shortAbort = RTMPChunkDecoder()
        #expect(throws: RTMPChunkError.malformedControlMessage(typeID: 2)) { try decodeAll(&shortAbort, hex("02 000000 000001 02 00000000 06")) }
    }

    @Test("a declared length over the limit fails at the header, before any payload is held")
    func messageTooLong() {
        var decoder = RTMPChunkDecoder(limits: RTMPChunkLimits(maxMessageLength: 1000))
        #expect(throws: RTMPChunkError.messageTooLong(1001)) { try decodeAll(&decoder, hex("06 000000 0003e9 09 01000000")) }
        #expect(decoder.bufferedByteCount == 0)
        var fmt1 = RTMPChunkDecoder(limits: RTMPChunkLimits(maxMessageLength: 1000))
        #expect(throws: RTMPChunkError.messageTooLong(0xFFFFFF)) {
            try decodeAll(&fmt1, hex("06 000000 000001 09 01000000 00 46 000000 ffffff 09"))
        }
    }

    @Test("a 16 MB declared message holds only what arrived")
    func growsAsDataArrives() throws {
        var decoder = RTMPChunkDecoder(limits: RTMPChunkLimits(maxChunkSize: 1 << 20))
        _ = try decodeAll(&decoder, hex("02 000000 000004 01 00000000 00100000"))
        #expect(try decodeAll(&decoder, hex("06 000000 ffffff 09 01000000") + payload(10)).isEmpty)
        #expect(decoder.bufferedByteCount == 10)
    }

    @Test("more half-received messages than allowed is an error")
    func tooManyAssembling() throws {
        var decoder = RTMPChunkDecoder(limits: RTMPChunkLimits(maxAssemblingChunkStreams: 3))
        var bytes: [UInt8] = []
        for id: UInt8 in 3...5 { bytes += [id] + hex("000000 0000c8 09 01000000") + payload(128) }
        #expect(try decodeAll(&decoder, bytes).isEmpty)
        #expect(throws: RTMPChunkError.tooManyChunkStreams) { try decodeAll(&decoder, hex("06 000000 0000c8 09 01000000")) }
    }

    @Test("more distinct chunk streams than allowed is an error")
    func tooManyKnown() throws {
        var decoder = RTMPChunkDecoder(limits: RTMPChunkLimits(maxKnownChunkStreams: 4))
        for id: UInt8 in 3...6 { _ = try decodeAll(&decoder, [id] + hex("000000 000001 09 01000000 00")) }
        #expect(throws: RTMPChunkError.tooManyKnownChunkStreams) { try decodeAll(&decoder, hex("07 000000 000001 09 01000000 00")) }
    }

    @Test("partial payloads beyond the byte limit fail as the bytes arrive")
    func bufferedBytes() throws {
        let limits = RTMPChunkLimits(maxChunkSize: 65_536, maxBufferedPayloadBytes: 10_000)
        var decoder = RTMPChunkDecoder(limits: limits)
        _ = try decodeAll(&decoder, hex("02 000000 000004 01 00000000 00000fa0"))  // chunk size 4000
        var bytes: [UInt8] = []
        for id: UInt8 in 3...4 { bytes += [id] + hex("000000 00ffff 09 01000000") + payload(4000) }
        #expect(try decodeAll(&decoder, bytes).isEmpty)
        #expect(decoder.bufferedByteCount == 8000)
        #expect(try decodeAll(&decoder, [0xc3] + payload(2000)).isEmpty)
        #expect(decoder.bufferedByteCount == 10_000)
        #expect(throws: RTMPChunkError.bufferedBytesExceeded) { try decodeAll(&decoder, [0]) }
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test("a full header in the middle of a message is an error")
    func headerInterrupts() throws {
        var decoder = RTMPChunkDecoder()
        _ = try decodeAll(&decoder, hex("06 000000 0000c8 09 01000000") + payload(128))
        #expect(throws: RTMPChunkError.headerInterruptsMessage(chunkStreamID: 6)) { try decodeAll(&decoder, hex("46 000000 000001 09")) }
    }

    @Test("a failed decoder stays failed and holds nothing")
    func staysFailed() {
        var decoder = RTMPChunkDecoder()
        #expect(throws: RTMPChunkError.missingMessageHeader(chunkStreamID: 3)) { try decodeAll(&decoder, hex("c3 00 00 00")) }
        #expect(throws: RTMPChunkError.missingMessageHeader(chunkStreamID: 3)) { try decodeAll(&decoder, hex("03 000000 000001 09 01000000 00")) }
        #expect(decoder.bufferedByteCount == 0)
    }
}

struct ChunkEncoderTests {
    @Test("exact chunks: format 0 header, format 3 continuations with 1-, 2- and 3-byte basic headers")
    func exactBytes() {
        var encoder = RTMPChunkEncoder()
        let body = payload(300)
        let encoded = encoder.encode(RTMPMessage(chunkStreamID: 6, messageStreamID: 1, typeID: 9, timestamp: 1000, payload: body))
        var expected = hex("06 0003e8 00012c 09 01000000") + body[0..<128]
        expected += [0xc6] + body[128..<256]
        expected += [0xc6] + body[256...]
        #expect(encoded == expected)
        let mid = encoder.encode(RTMPMessage(chunkStreamID: 70, messageStreamID: 0, typeID: 8, timestamp: 0, payload: [1]))
        #expect(mid == hex("00 06 000000 000001 08 00000000 01"))
        let high = encoder.encode(RTMPMessage(chunkStreamID: 65599, messageStreamID: 0, typeID: 8, timestamp: 0, payload: payload(129)))
        #expect(high == hex("01 ffff 000000 000081 08 00000000") + payload(128) + hex("c1 ffff") + [128])
    }

    @Test("timestamps from 0xFFFFFF up use the extended field, on every chunk")
    func extended() {
        var encoder = RTMPChunkEncoder(chunkSize: 2)
        let encoded = encoder.encode(RTMPMessage(chunkStreamID: 4, messageStreamID: 1, typeID: 8, timestamp: 0xFF_FFFF, payload: [1, 2, 3]))
        #expect(encoded == hex("04 ffffff 000003 08 01000000 00ffffff 0102 c4 00ffffff 03"))
        var below = RTMPChunkEncoder()
        #expect(below.encode(RTMPMessage(chunkStreamID: 4, messageStreamID: 1, typeID: 8, timestamp: 0xFF_FFFE, payload: []))
            == hex("04 fffffe 000000 08 01000000"))
    }

    @Test("encoding Set Chunk Size switches the encoder's chunk size after that message")
    func encoderChunkSize() {
        var encoder = RTMPChunkEncoder()
        _ = encoder.encode(RTMPMessage(chunkStreamID: 2, messageStreamID: 0, typeID: 1, timestamp: 0, payload: hex("00001000")))
        #expect(encoder.chunkSize == 4096)
    }

    @Test("seeded round trips: random messages, chunk sizes, stream IDs and read splits")
    func roundTrips() throws {
        var generator = SeededGenerator(seed: 2024)
        for _ in 0..<60 {
            var encoder = RTMPChunkEncoder()
            var decoder = RTMPChunkDecoder()
            var sent: [RTMPMessage] = []
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 1...12, using: &generator) {
                if Int.random(in: 0..<4, using: &generator) == 0 {
                    let size = UInt32.random(in: 1...5000, using: &generator)
                    let sizeBytes: [UInt8] = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: size >> UInt32($0)) }
                    let message = RTMPMessage(chunkStreamID: 2, messageStreamID: 0, typeID: 1, timestamp: 0, payload: sizeBytes)
                    bytes += encoder.encode(message)
                    sent.append(message)
                    continue
                }
                let chunkStreamID = [UInt32(3), 4, 63, 64, 319, 320, 65599].randomElement(using: &generator)!
                let timestamp = [UInt32(0), 40, 0xFF_FFFE, 0xFF_FFFF, 0x1234_5678, 0xFFFF_FFFF].randomElement(using: &generator)!
                let messageStreamID = UInt32.random(in: 0...3, using: &generator)
                let typeID: UInt8 = [8, 9, 18, 20].randomElement(using: &generator)!
                let length = Int.random(in: 0...9000, using: &generator)
                let seed = UInt8.random(in: 0...255, using: &generator)
                let message = RTMPMessage(chunkStreamID: chunkStreamID, messageStreamID: messageStreamID, typeID: typeID,
                                          timestamp: timestamp, payload: payload(length, seed: seed))
                bytes += encoder.encode(message)
                sent.append(message)
            }
            var received: [RTMPMessage] = []
            for piece in randomSplits(bytes, maxPiece: 3000, using: &generator) {
                received += try decodeAll(&decoder, Array(piece))
            }
            #expect(received == sent)
            #expect(decoder.bufferedByteCount == 0)
        }
    }
}

struct TimestampUnwrapperTests {
    @Test("the first timestamp is taken as is; steady steps follow")
    func steady() {
        var unwrapper = RTMPTimestampUnwrapper()
        #expect([1000, 1033, 1066].map { unwrapper.unwrap($0) } == [1000, 1033, 1066])
    }

    @Test("crossing 2^32 keeps counting up")
    func wraps() {
        var unwrapper = RTMPTimestampUnwrapper()
        let raw: [UInt32] = [0xFFFF_FFC0, 0xFFFF_FFFF, 0x0000_0010, 0x0000_1000]
        #expect(raw.map { unwrapper.unwrap($0) } == [0xFFFF_FFC0, 0xFFFF_FFFF, 0x1_0000_0010, 0x1_0000_1000])
        // And again, a second time round, time passing in 50 s steps (jumps beyond a minute are
        // discontinuities, not time).
        var expected: Int64 = 0x1_0000_1000
        while expected < 0x2_0000_1000 {
            expected += 50_000
            #expect(unwrapper.unwrap(UInt32(truncatingIfNeeded: expected)) == expected)
        }
        #expect(unwrapper.discontinuities == 0)
    }

    @Test("small backward steps stay backward, also right after a wrap")
    func backwards() {
        var unwrapper = RTMPTimestampUnwrapper()
        #expect(unwrapper.unwrap(5000) == 5000)
        #expect(unwrapper.unwrap(4980) == 4980)
        #expect(unwrapper.unwrap(5020) == 5020)
        var wrapped = RTMPTimestampUnwrapper()
        _ = wrapped.unwrap(0xFFFF_FFF0)
        #expect(wrapped.unwrap(0x10) == 0x1_0000_0010)
        #expect(wrapped.unwrap(0xFFFF_FFFA) == 0xFFFF_FFFA)  // audio 22 ms behind video, across the wrap
        #expect(wrapped.unwrap(0x20) == 0x1_0000_0020)
    }

    @Test("a peer alternating 0 and 2^31 (issue 23's crash: 4.4 million of them overflowed the time) only counts discontinuities")
    func alternatingHalfWraps() {
        var unwrapper = RTMPTimestampUnwrapper()
        var extreme: Int64 = 0
        for index in 0..<4_400_000 {
            extreme = max(extreme, abs(unwrapper.unwrap(index % 2 == 0 ? 0 : 0x8000_0000)))
        }
        #expect(extreme == 0)
        #expect(unwrapper.discontinuities == 4_399_999)
    }

    @Test("a jump of more than a minute either way is a discontinuity; time goes on from where it was")
    func jumps() {
        var unwrapper = RTMPTimestampUnwrapper()
        #expect(unwrapper.unwrap(10_000) == 10_000)
        #expect(unwrapper.unwrap(10_000 + 60_000) == 70_000)
        #expect(unwrapper.discontinuities == 0)
        #expect(unwrapper.unwrap(500_000) == 70_000)
        #expect(unwrapper.unwrap(500_033) == 70_033)
        #expect(unwrapper.unwrap(33) == 70_033)
        #expect(unwrapper.discontinuities == 2)
    }
}
