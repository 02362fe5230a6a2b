// RFC 7741 VP8 and RFC 7587 Opus depacketization.
@testable import WebRTCMedia
import TestSupport
import Testing

struct VP8DescriptorTests {
    @Test("descriptor vectors: minimal, 7-bit and 15-bit picture IDs, TL0PICIDX, TID/Y/KEYIDX")
    func vectors() throws {
        let cases: [([UInt8], VP8PayloadDescriptor)] = [
            (hex("10"), .init(isPartitionStart: true)),
            (hex("21"), .init(isNonReference: true, isPartitionStart: false, partitionIndex: 1)),
            (hex("90 80 12"), .init(isPartitionStart: true, pictureID: .short(0x12))),
            (hex("90 80 92 34"), .init(isPartitionStart: true, pictureID: .long(0x1234))),
            (hex("90 80 ff ff"), .init(isPartitionStart: true, pictureID: .long(0x7FFF))),
            (hex("90 f0 92 34 05 e3"), .init(isPartitionStart: true, pictureID: .long(0x1234), tl0PictureIndex: 5,
                                              temporalLayer: 3, isLayerSync: true, keyIndex: 3)),
            (hex("80 20 40"), .init(isPartitionStart: false, temporalLayer: 1)),
            (hex("80 10 1f"), .init(isPartitionStart: false, keyIndex: 31)),
        ]
        for (bytes, descriptor) in cases {
            let parsed = try #require(VP8PayloadDescriptor.parse(bytes + [0xAA]))
            #expect(parsed.descriptor == descriptor, "\(hexString(bytes))")
            #expect(parsed.length == bytes.count)
            #expect(descriptor.serialized() == bytes)
        }
        #expect(VP8PayloadDescriptor.PictureID.long(0x1234).value == 0x1234)
    }

    @Test("truncated descriptors are refused")
    func truncated() {
        for bytes in [hex(""), hex("80"), hex("80 80"), hex("80 80 80"), hex("80 40"), hex("80 20"), hex("80 10")] {
            #expect(VP8PayloadDescriptor.parse(bytes) == nil, "\(hexString(bytes))")
        }
    }
}

struct VP8DepacketizerTests {
    /// A keyframe tag (P = 0) then data; an interframe tag has P = 1.
    static let keyframe = hex("10 02 00 9d 01 2a 80 02 e0 01") + Array(repeating: 0x55, count: 40)
    static let interframe = hex("31 01 00") + Array(repeating: 0x66, count: 20)

    static func packet(_ descriptor: VP8PayloadDescriptor, _ data: ArraySlice<UInt8>) -> [UInt8] {
        descriptor.serialized() + data
    }

    @Test("a keyframe over three packets and two partitions, with a 15-bit picture ID")
    func partitions() {
        var depacketizer = VP8Depacketizer()
        let data = Self.keyframe
        let id = VP8PayloadDescriptor.PictureID.long(0x7ABC)
        var events = depacketizer.push(payload: Self.packet(.init(isPartitionStart: true, pictureID: id), data[0..<20]),
                                       sequence: 100, timestamp: 0, marker: false)
        events += depacketizer.push(payload: Self.packet(.init(isPartitionStart: false, pictureID: id), data[20..<35]),
                                    sequence: 101, timestamp: 0, marker: false)
        events += depacketizer.push(payload: Self.packet(.init(isPartitionStart: true, partitionIndex: 1, pictureID: id), data[35...]),
                                    sequence: 102, timestamp: 0, marker: true)
        #expect(frames(events) == [EncodedFrame(codec: .vp8, timestamp: 0, data: data, isKeyframe: true, isComplete: true,
                                                followsLoss: false, firstSequence: 100, lastSequence: 102)])
        #expect(depacketizer.lastPictureID == id)
    }

    @Test("an interframe is not a keyframe; picture IDs wrap at 15 bits")
    func interframes() {
        var depacketizer = VP8Depacketizer()
        var ids: [UInt16] = []
        var keyframes: [Bool] = []
        for (index, picture) in [UInt16(0x7FFE), 0x7FFF, 0].enumerated() {
            let data = index == 0 ? Self.keyframe : Self.interframe
            let output = frames(depacketizer.push(payload: Self.packet(.init(isPartitionStart: true, pictureID: .long(picture)), data[...]),
                                                  sequence: Int64(index), timestamp: Int64(index) * 3000, marker: true))
            keyframes += output.map(\.isKeyframe)
            ids.append(depacketizer.lastPictureID?.value ?? 0xFFFF)
        }
        #expect(keyframes == [true, false, false])
        #expect(ids == [0x7FFE, 0x7FFF, 0])
    }

    @Test("a lost middle packet makes the frame incomplete")
    func lostMiddle() {
        var depacketizer = VP8Depacketizer()
        let data = Self.keyframe
        _ = depacketizer.push(payload: Self.packet(.init(isPartitionStart: true), data[0..<20]), sequence: 1, timestamp: 0, marker: false)
        let events = depacketizer.push(payload: Self.packet(.init(isPartitionStart: false), data[35...]), sequence: 3, timestamp: 0, marker: true)
        let output = frames(events)
        #expect(output.count == 1)
        #expect(!output[0].isComplete)
        #expect(output[0].isKeyframe)  // the header was seen, but the frame is not whole
    }

    @Test("a frame whose first packet was lost is incomplete and not a keyframe")
    func lostStart() {
        var depacketizer = VP8Depacketizer()
        _ = depacketizer.push(payload: Self.packet(.init(isPartitionStart: true), Self.interframe[...]), sequence: 1, timestamp: 0, marker: true)
        let events = depacketizer.push(payload: Self.packet(.init(isPartitionStart: false), Self.keyframe[20...]), sequence: 3, timestamp: 3000, marker: true)
        let output = frames(events)
        #expect(output.map(\.isComplete) == [false])
        #expect(output.map(\.isKeyframe) == [false])
        #expect(output.map(\.followsLoss) == [true])
    }

    @Test("frames split by timestamp when a marker is lost; malformed payloads discarded")
    func boundariesAndMalformed() {
        var depacketizer = VP8Depacketizer()
        _ = depacketizer.push(payload: Self.packet(.init(isPartitionStart: true), Self.interframe[...]), sequence: 1, timestamp: 0, marker: false)
        let first = frames(depacketizer.push(payload: Self.packet(.init(isPartitionStart: true), Self.interframe[...]),
                                             sequence: 2, timestamp: 3000, marker: false))
        #expect(first.map(\.timestamp) == [0])
        #expect(first.map(\.isComplete) == [true])
        let events = depacketizer.push(payload: hex("80"), sequence: 3, timestamp: 3000, marker: true)
        #expect(discards(events) == [.malformedPayload])
        #expect(frames(events).map(\.isComplete) == [false])
        // Descriptor only, no VP8 data.
        #expect(discards(depacketizer.push(payload: hex("10"), sequence: 4, timestamp: 6000, marker: false)) == [.malformedPayload])
        #expect(discards(depacketizer.push(payload: hex("10 00"), sequence: 4, timestamp: 6000, marker: false)) == [.outOfOrder(4)])
        #expect(frames(depacketizer.flush()).map(\.isComplete) == [false])
    }

    @Test("a frame over the size limit is cut and reported")
    func tooLarge() {
        var depacketizer = VP8Depacketizer(maxFrameSize: 45)
        var events = depacketizer.push(payload: Self.packet(.init(isPartitionStart: true), Self.keyframe[0..<40]), sequence: 1, timestamp: 0, marker: false)
        events += depacketizer.push(payload: Self.packet(.init(isPartitionStart: false), Self.keyframe[40...]), sequence: 2, timestamp: 0, marker: true)
        #expect(discards(events) == [.frameTooLarge])
        #expect(frames(events).map(\.data.count) == [40])
    }
}

struct OpusDepacketizerTests {
    @Test("each packet is one frame at its timestamp; a gap is flagged for concealment")
    func passThrough() {
        var depacketizer = OpusDepacketizer()
        let first = frames(depacketizer.push(payload: [0xFC, 1, 2], sequence: 10, timestamp: 48_000))
        #expect(first == [EncodedFrame(codec: .opus, timestamp: 48_000, data: [0xFC, 1, 2], isKeyframe: true, isComplete: true,
                                       followsLoss: false, firstSequence: 10, lastSequence: 10)])
        #expect(frames(depacketizer.push(payload: [0xFC], sequence: 11, timestamp: 48_960)).map(\.followsLoss) == [false])
        #expect(frames(depacketizer.push(payload: [0xFC], sequence: 13, timestamp: 50_880)).map(\.followsLoss) == [true])
        #expect(discards(depacketizer.push(payload: [], sequence: 14, timestamp: 51_840)) == [.malformedPayload])
        #expect(discards(depacketizer.push(payload: [1], sequence: 12, timestamp: 49_920)) == [.outOfOrder(12)])
    }
}
