// RFC 6184 depacketization into Annex B access units.
@testable import WebRTCMedia
import TestSupport
import Testing

struct H264DepacketizerTests {
    static let sps = hex("67 42 c0 1f da 01 40 16")
    static let pps = hex("68 ce 3c 80")
    static let idr = hex("65 88 84 00 33 ff")
    static let slice = hex("41 9a 24 6c")
    static let aud = hex("09 f0")

    static func annexB(_ units: [[UInt8]]) -> [UInt8] { units.flatMap { [0, 0, 0, 1] + $0 } }

    static func stapA(_ units: [[UInt8]]) -> [UInt8] {
        [0x78] + units.flatMap { [UInt8($0.count >> 8), UInt8($0.count & 0xFF)] + $0 }
    }

    /// FU-A pieces of `nal`, `size` bytes of NAL data each.
    static func fuA(_ nal: [UInt8], size: Int) -> [[UInt8]] {
        let indicator = nal[0] & 0xE0 | 28
        let body = Array(nal.dropFirst())
        return stride(from: 0, to: body.count, by: size).map { start in
            var header = nal[0] & 0x1F
            if start == 0 { header |= 0x80 }
            if start + size >= body.count { header |= 0x40 }
            return [indicator, header] + body[start..<min(start + size, body.count)]
        }
    }

    @Test("STAP-A with SPS, PPS and IDR: one complete keyframe in Annex B")
    func stapAKeyframe() {
        var depacketizer = H264Depacketizer()
        let payload = Self.stapA([Self.sps, Self.pps, Self.idr])
        #expect(Array(payload.prefix(3)) == [0x78, 0x00, 0x08])
        let output = frames(depacketizer.push(payload: payload, sequence: 10, timestamp: 90_000, marker: true))
        #expect(output == [EncodedFrame(codec: .h264, timestamp: 90_000, data: Self.annexB([Self.sps, Self.pps, Self.idr]),
                                        isKeyframe: true, isComplete: true, followsLoss: false, firstSequence: 10, lastSequence: 10)])
    }

    @Test("single NAL unit packets, frame ended by the marker; a P slice is not a keyframe")
    func singleNAL() {
        var depacketizer = H264Depacketizer()
        #expect(depacketizer.push(payload: Self.slice, sequence: 1, timestamp: 0, marker: false).isEmpty)
        let output = frames(depacketizer.push(payload: hex("41 9b 00"), sequence: 2, timestamp: 0, marker: true))
        #expect(output.count == 1)
        #expect(output[0].data == Self.annexB([Self.slice, hex("41 9b 00")]))
        #expect(!output[0].isKeyframe)
        #expect(output[0].isComplete)
        #expect((output[0].firstSequence, output[0].lastSequence) == (1, 2))
    }

    @Test("a new timestamp ends the frame when the marker was lost with nothing else")
    func timestampBoundary() {
        var depacketizer = H264Depacketizer()
        _ = depacketizer.push(payload: Self.slice, sequence: 1, timestamp: 0, marker: false)
        let output = frames(depacketizer.push(payload: Self.slice, sequence: 2, timestamp: 3000, marker: false))
        #expect(output.map(\.timestamp) == [0])
        #expect(output[0].isComplete)
        #expect(frames(depacketizer.flush()).map(\.timestamp) == [3000])
        #expect(depacketizer.flush().isEmpty)
    }

    @Test("FU-A reassembles a fragmented IDR")
    func fuA() {
        var depacketizer = H264Depacketizer()
        let nal = [0x65] + (0..<3000).map { UInt8(truncatingIfNeeded: $0) }
        let pieces = Self.fuA(nal, size: 1100)
        #expect(pieces.count == 3)
        #expect(pieces.map { $0[1] } == [0x85, 0x05, 0x45])
        #expect(pieces[0][0] == 0x7C)
        var events: [DepacketizerEvent] = []
        for (index, piece) in pieces.enumerated() {
            events += depacketizer.push(payload: piece, sequence: Int64(index), timestamp: 0, marker: index == 2)
        }
        #expect(frames(events).map(\.data) == [Self.annexB([nal])])
        #expect(frames(events).first?.isKeyframe == true)
        #expect(discards(events).isEmpty)
    }

    @Test("FU-A with a lost middle fragment: the NAL is dropped and the frame reported broken")
    func fuALostMiddle() {
        var depacketizer = H264Depacketizer()
        let pieces = Self.fuA([0x65] + Array(repeating: 7, count: 300), size: 100)
        #expect(pieces.count == 3)
        var events = depacketizer.push(payload: Self.stapA([Self.sps, Self.pps]), sequence: 0, timestamp: 0, marker: false)
        events += depacketizer.push(payload: pieces[0], sequence: 1, timestamp: 0, marker: false)
        events += depacketizer.push(payload: pieces[2], sequence: 3, timestamp: 0, marker: true)  // 2 lost
        #expect(discards(events) == [.incompleteFragment, .orphanFragment])
        let output = frames(events)
        #expect(output.count == 1)
        #expect(output[0].data == Self.annexB([Self.sps, Self.pps]))
        #expect(!output[0].isComplete)
        #expect(!output[0].isKeyframe)
    }

    @Test("FU-A whose start was lost is an orphan; the frame after a gap is incomplete")
    func fuALostStart() {
        var depacketizer = H264Depacketizer()
        _ = depacketizer.push(payload: Self.slice, sequence: 1, timestamp: 0, marker: true)
        let pieces = Self.fuA([0x41] + Array(repeating: 1, count: 200), size: 100)
        let events = depacketizer.push(payload: pieces[1], sequence: 3, timestamp: 3000, marker: true)
        #expect(discards(events) == [.orphanFragment])
        let output = frames(events)
        #expect(output.count == 1 && !output[0].isComplete && output[0].followsLoss && output[0].data.isEmpty)
    }

    @Test("a frame that ends inside a fragment is broken")
    func fuAUnfinished() {
        var depacketizer = H264Depacketizer()
        let pieces = Self.fuA([0x65] + Array(repeating: 7, count: 300), size: 100)
        _ = depacketizer.push(payload: Self.slice, sequence: 0, timestamp: 0, marker: false)
        let events = depacketizer.push(payload: pieces[0], sequence: 1, timestamp: 0, marker: true)
        #expect(discards(events) == [.incompleteFragment])
        #expect(frames(events).map(\.isComplete) == [false])
        #expect(frames(events).map(\.data) == [Self.annexB([Self.slice])])
    }

    @Test("SPS and PPS seen earlier are put in front of an IDR that comes without them, after an AUD")
    func parameterSetsPrepended() {
        var depacketizer = H264Depacketizer()
        _ = depacketizer.push(payload: Self.stapA([Self.sps, Self.pps, Self.idr]), sequence: 0, timestamp: 0, marker: true)
        _ = depacketizer.push(payload: Self.slice, sequence: 1, timestamp: 3000, marker: true)
        let bare = frames(depacketizer.push(payload: Self.idr, sequence: 2, timestamp: 6000, marker: true))
        #expect(bare.map(\.data) == [Self.annexB([Self.sps, Self.pps, Self.idr])])
        #expect(bare.map(\.isKeyframe) == [true])
        let delimited = frames(depacketizer.push(payload: Self.stapA([Self.aud, Self.idr]), sequence: 3, timestamp: 9000, marker: true))
        #expect(delimited.map(\.data) == [Self.annexB([Self.aud, Self.sps, Self.pps, Self.idr])])
        // A new SPS replaces the remembered one.
        let newSPS = hex("67 64 00 28 ac")
        _ = depacketizer.push(payload: newSPS, sequence: 4, timestamp: 12_000, marker: false)
        _ = depacketizer.push(payload: Self.slice, sequence: 5, timestamp: 12_000, marker: true)
        let later = frames(depacketizer.push(payload: Self.idr, sequence: 6, timestamp: 15_000, marker: true))
        #expect(later.map(\.data) == [Self.annexB([newSPS, Self.pps, Self.idr])])
    }

    @Test("STAP-B, MTAP16, MTAP24 and FU-B are reported unsupported and break the frame")
    func unsupported() {
        for type: UInt8 in [25, 26, 27, 29] {
            var depacketizer = H264Depacketizer()
            let events = depacketizer.push(payload: [0x60 | type, 0, 0, 1, 2], sequence: 0, timestamp: 0, marker: true)
            #expect(discards(events) == [.unsupportedPacketization(type)])
            #expect(frames(events).map(\.isComplete) == [false])
        }
    }

    @Test("malformed STAP-A and empty payloads are discarded; out-of-order input refused")
    func malformed() {
        var depacketizer = H264Depacketizer()
        #expect(discards(depacketizer.push(payload: [0x78, 0x00, 0x09, 0x67], sequence: 0, timestamp: 0, marker: false)) == [.malformedPayload])
        #expect(discards(depacketizer.push(payload: [0x78, 0x00], sequence: 1, timestamp: 0, marker: false)) == [.malformedPayload])
        #expect(discards(depacketizer.push(payload: [0x78], sequence: 2, timestamp: 0, marker: false)) == [.malformedPayload])
        #expect(discards(depacketizer.push(payload: [0x7C], sequence: 3, timestamp: 0, marker: false)) == [.malformedPayload])
        #expect(discards(depacketizer.push(payload: [], sequence: 4, timestamp: 0, marker: false)) == [.malformedPayload])
        #expect(discards(depacketizer.push(payload: Self.slice, sequence: 4, timestamp: 0, marker: false)) == [.outOfOrder(4)])
    }

    @Test("a frame over the size limit is cut and reported")
    func tooLarge() {
        var depacketizer = H264Depacketizer(maxFrameSize: 1000)
        var events: [DepacketizerEvent] = []
        for seq in 0..<5 {
            events += depacketizer.push(payload: [0x41] + Array(repeating: 1, count: 299), sequence: Int64(seq), timestamp: 0, marker: seq == 4)
        }
        #expect(discards(events) == [.frameTooLarge, .frameTooLarge])
        #expect(frames(events).map(\.data.count) == [3 * 304])
        #expect(frames(events).map(\.isComplete) == [false])
    }

    @Test("a fragmented keyframe through the reorder buffer, reordered across the sequence wrap")
    func throughReorderBuffer() {
        var unwrapper = SequenceUnwrapper()
        var timestamps = TimestampUnwrapper()
        var buffer = ReorderBuffer<RTPPacket>()
        var depacketizer = H264Depacketizer()
        let nal = [0x65] + (0..<5000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let payloads = [Self.stapA([Self.sps, Self.pps])] + Self.fuA(nal, size: 1000)
        let packets = payloads.enumerated().map { index, payload in
            RTPPacket(marker: index == payloads.count - 1, payloadType: 96, sequenceNumber: 65533 &+ UInt16(index),
                      timestamp: UInt32.max - 100, ssrc: 1, payload: payload)
        }
        var output: [EncodedFrame] = []
        for index in [0, 2, 1, 3, 5, 4] {
            let packet = packets[index]
            guard let extended = unwrapper.unwrap(packet.sequenceNumber).extended else { continue }
            _ = buffer.insert(packet, sequence: extended, now: 0)
            for case .packet(let sequence, let released) in buffer.poll(now: 0) {
                output += frames(depacketizer.push(payload: released.payload, sequence: sequence,
                                                   timestamp: timestamps.unwrap(released.timestamp), marker: released.marker))
            }
        }
        #expect(output.count == 1)
        #expect(output.first?.data == Self.annexB([Self.sps, Self.pps, nal]))
        #expect(output.first?.isComplete == true)
        #expect(output.first?.lastSequence == Int64(65533 + 5))
    }
}
