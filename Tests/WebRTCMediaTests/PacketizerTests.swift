// RFC 6184 (mode 1) and RFC 7587 packetization, checked against the receive side's own
// depacketizers: what we send must come back as the access unit a decoder needs.
@testable import WebRTCMedia
import MediaCore
import TestSupport
import Testing

/// Test helpers for the send side.
enum SendFixtures {
    static let sps = H264DepacketizerTests.sps
    static let pps = H264DepacketizerTests.pps
    static let idr = H264DepacketizerTests.idr
    static let slice = H264DepacketizerTests.slice
    static let aud = H264DepacketizerTests.aud

    static func annexB(_ units: [[UInt8]]) -> [UInt8] { H264DepacketizerTests.annexB(units) }

    /// A STAP-A of `units` with the given header byte (F, NRI, 24).
    static func stapA(_ units: [[UInt8]], header: UInt8) -> [UInt8] {
        [header] + H264DepacketizerTests.stapA(units).dropFirst()
    }

    static func lengthPrefixed(_ units: [[UInt8]], size: Int) -> [UInt8] {
        units.flatMap { unit in (0..<size).reversed().map { UInt8(truncatingIfNeeded: unit.count >> (8 * $0)) } + unit }
    }

    /// An avcC record (ISO 14496-15) with 4-byte lengths unless told otherwise.
    static func avcC(sps: [UInt8], pps: [UInt8], lengthSize: Int = 4) -> [UInt8] {
        [1, sps[1], sps[2], sps[3], 0xFC | UInt8(lengthSize - 1), 0xE1, UInt8(sps.count >> 8), UInt8(sps.count & 0xFF)] + sps
            + [1, UInt8(pps.count >> 8), UInt8(pps.count & 0xFF)] + pps
    }

    /// A NAL unit of `size` bytes: header `header`, then bytes that never form a start code.
    static func nal(_ header: UInt8, size: Int, seed: Int = 0) -> [UInt8] {
        [header] + (1..<max(1, size)).map { UInt8(truncatingIfNeeded: ($0 &* 31 &+ seed) % 255 + 1) }
    }

    static func pts(frame: Int64) -> MediaTime { MediaTime(ticks: frame, timeBase: Rational(1, 30)) }

    /// The frames `packetized` come back as through the receive side's H.264 depacketizer.
    static func depacketize(_ packetized: [PacketizedFrame], firstSequence: Int64 = 0) -> [DepacketizerEvent] {
        var depacketizer = H264Depacketizer()
        var sequence = firstSequence
        var events: [DepacketizerEvent] = []
        for frame in packetized {
            for index in 0..<frame.packetCount {
                events += depacketizer.push(payload: Array(frame.payload(at: index)), sequence: sequence,
                                            timestamp: frame.timestamp, marker: frame.marker(at: index))
                sequence += 1
            }
        }
        return events + depacketizer.flush()
    }
}

struct H264PacketizerTests {
    typealias F = SendFixtures

    @Test("a small delta frame: one single NAL unit packet with the marker, stamped at 90 kHz from the pts")
    func singleNAL() throws {
        var packetizer = H264Packetizer()
        let frame = try packetizer.packetize(F.annexB([F.slice]), pts: F.pts(frame: 7))
        #expect(frame.payloads.map(Array.init) == [F.slice])
        #expect(frame.timestamp == 7 * 3000)
        #expect(frame.marker(at: 0))
        #expect(!frame.isKeyframe)
        #expect(frame.codec == .h264 && frame.mediaType == .video)
        let ntsc = try packetizer.packetize(F.annexB([F.slice]), pts: MediaTime(ticks: 2, timeBase: Rational(1001, 30000)))
        #expect(ntsc.timestamp == 6006)
        #expect(try packetizer.packetize(F.annexB([F.slice]), pts: .milliseconds(1000)).timestamp == 90_000)
    }

    @Test("an IDR without SPS/PPS gets the extradata's in one STAP-A before its FU-A fragments; it depacketizes to a decodable keyframe")
    func idrGetsParameterSets() throws {
        let sets = try H264ParameterSets(extradata: F.annexB([F.sps, F.pps]))
        #expect(sets == H264ParameterSets(sequenceParameterSets: [F.sps], pictureParameterSets: [F.pps]))
        #expect(sets.accessUnitFormat == .annexB)
        var packetizer = H264Packetizer(parameterSets: sets)
        let idr = F.nal(0x65, size: 3000)
        let frame = try packetizer.packetize(F.annexB([idr]), pts: F.pts(frame: 0))
        #expect(frame.isKeyframe)
        #expect(Array(frame.payload(at: 0)) == H264DepacketizerTests.stapA([F.sps, F.pps]))
        #expect(frame.packetCount == 4)
        #expect((1..<4).allSatisfy { frame.payload(at: $0).first == 0x7C })
        #expect((0..<4).map { frame.marker(at: $0) } == [false, false, false, true])
        let output = frames(F.depacketize([frame]))
        #expect(output.map(\.data) == [F.annexB([F.sps, F.pps, idr])])
        #expect(output.map(\.isKeyframe) == [true])
        #expect(output.map(\.isComplete) == [true])
        #expect(packetizer.parameterSetsInserted == 1)
        #expect(packetizer.keyframesPacketized == 1)
    }

    @Test("a small IDR goes in the same STAP-A as its SPS and PPS, marked")
    func smallIDRAggregated() throws {
        var packetizer = H264Packetizer(parameterSets: .init(sequenceParameterSets: [F.sps], pictureParameterSets: [F.pps]))
        let frame = try packetizer.packetize(F.annexB([F.idr]), pts: F.pts(frame: 1))
        #expect(frame.payloads.map(Array.init) == [H264DepacketizerTests.stapA([F.sps, F.pps, F.idr])])
        #expect(frame.marker(at: 0))
        #expect(frames(F.depacketize([frame])).map(\.data) == [F.annexB([F.sps, F.pps, F.idr])])
    }

    @Test("avcC extradata with length-prefixed access units (4, 2 or 1-byte lengths) packetize as the Annex B form does")
    func avcc() throws {
        let idr = F.nal(0x65, size: 2500)
        var reference = H264Packetizer(parameterSets: try H264ParameterSets(extradata: F.annexB([F.sps, F.pps])))
        let expected = [try reference.packetize(F.annexB([idr]), pts: F.pts(frame: 0)),
                        try reference.packetize(F.annexB([F.slice]), pts: F.pts(frame: 1))]
        for size in [4, 2] {
            let sets = try H264ParameterSets(extradata: F.avcC(sps: F.sps, pps: F.pps, lengthSize: size))
            #expect(sets.nalLengthSize == size)
            #expect(sets.accessUnitFormat == .lengthPrefixed(lengthSize: size))
            var packetizer = H264Packetizer(parameterSets: sets)
            let result = [try packetizer.packetize(F.lengthPrefixed([idr], size: size), format: sets.accessUnitFormat, pts: F.pts(frame: 0)),
                          try packetizer.packetize(F.lengthPrefixed([F.slice], size: size), format: sets.accessUnitFormat, pts: F.pts(frame: 1))]
            #expect(result == expected, "length size \(size)")
        }
        var small = H264Packetizer()
        let frame = try small.packetize(F.lengthPrefixed([F.slice, [0x41, 0x9B, 0x01]], size: 1), format: .lengthPrefixed(lengthSize: 1),
                                        pts: F.pts(frame: 0))
        // Slices of NRI 2: the aggregate's NRI is 2 too.
        #expect(frame.payloads.map(Array.init) == [F.stapA([F.slice, [0x41, 0x9B, 0x01]], header: 0x58)])
    }

    @Test("FU-A: fragments of nearly equal size within the limit, S and E bits, F/NRI in the indicator, type in the header")
    func fragmentation() throws {
        var packetizer = H264Packetizer(maxPayloadSize: 1200)
        // Body 2499 bytes over 1198 bytes of room: three fragments of 833.
        let nal = F.nal(0x45, size: 2500)
        let frame = try packetizer.packetize(F.annexB([nal]), pts: F.pts(frame: 0))
        #expect(frame.payloads.map(\.count) == [835, 835, 835])
        #expect(frame.payloads.map { $0[$0.startIndex] } == [0x5C, 0x5C, 0x5C])
        #expect(frame.payloads.map { $0[$0.startIndex + 1] } == [0x85, 0x05, 0x45])
        #expect(frame.payloads.flatMap { $0.dropFirst(2) } == Array(nal.dropFirst()))
        // Uneven: 2399 bytes of body is three fragments of 800, 800 and 799.
        let uneven = try packetizer.packetize(F.annexB([F.nal(0x41, size: 2400)]), pts: F.pts(frame: 1))
        #expect(uneven.payloads.map(\.count) == [802, 802, 801])
        // A body of exactly twice the room: two full packets.
        let exact = try packetizer.packetize(F.annexB([F.nal(0x41, size: 2 * 1198 + 1)]), pts: F.pts(frame: 2))
        #expect(exact.payloads.map(\.count) == [1200, 1200])
        let output = frames(F.depacketize([frame, uneven, exact]))
        #expect(output.map(\.data) == [F.annexB([nal]), F.annexB([F.nal(0x41, size: 2400)]),
                                       F.annexB([F.nal(0x41, size: 2 * 1198 + 1)])])
        #expect(output.allSatisfy { $0.isComplete })
    }

    @Test("a NAL unit of exactly the limit goes alone; one byte more is fragmented")
    func limit() throws {
        var packetizer = H264Packetizer(maxPayloadSize: 500)
        #expect(try packetizer.packetize(F.annexB([F.nal(0x41, size: 500)]), pts: F.pts(frame: 0)).payloads.map(\.count) == [500])
        #expect(try packetizer.packetize(F.annexB([F.nal(0x41, size: 501)]), pts: F.pts(frame: 1)).payloads.map(\.count) == [252, 252])
    }

    @Test("STAP-A takes the following units while they fit; F is any unit's, NRI the highest; a lone unit is not aggregated")
    func aggregation() throws {
        var packetizer = H264Packetizer(maxPayloadSize: 40)
        let sei = F.nal(0x06, size: 10)
        let low = F.nal(0x21, size: 10)
        let broken = F.nal(0x81, size: 10)  // F bit set
        let last = F.nal(0x41, size: 30)
        let frame = try packetizer.packetize(F.annexB([sei, low, broken, last]), pts: F.pts(frame: 0))
        // 1 + 3 × (2 + 10) = 37 ≤ 40; the fourth would need 32 more.
        let aggregate = F.stapA([sei, low, broken], header: 0x80 | 0x20 | 24)
        #expect(frame.payloads.map(Array.init) == [aggregate, last])
        #expect(frame.payloads.allSatisfy { $0.count <= 40 })
        #expect(frames(F.depacketize([frame])).map(\.data) == [F.annexB([sei, low, broken, last])])
    }

    @Test("access unit delimiters and filler are dropped; 3- and 4-byte start codes, leading garbage, trailing zeros")
    func annexBSplitting() throws {
        var packetizer = H264Packetizer()
        let second = hex("41 9b 00 03 07")
        let bytes = hex("ff 00 00 00 01 09 f0 00 00 01") + F.slice + hex("00 00 00 00 00 01 0c ff ff 00 00 01") + second + hex("00 00")
        let frame = try packetizer.packetize(bytes, pts: F.pts(frame: 0))
        #expect(frame.payloads.map(Array.init) == [F.stapA([F.slice, second], header: 0x58)])
        #expect(packetizer.nalUnitsDropped == 2)
        #expect(throws: PacketizerError.noNALUnits) { try packetizer.packetize(F.annexB([F.aud]), pts: F.pts(frame: 1)) }
        #expect(throws: PacketizerError.noNALUnits) { try packetizer.packetize([], pts: F.pts(frame: 1)) }
        #expect(throws: PacketizerError.noNALUnits) { try packetizer.packetize(hex("41 9a 24"), pts: F.pts(frame: 1)) }
        #expect(throws: PacketizerError.noNALUnits) { try packetizer.packetize(hex("00 00 01 00 00 00 01"), pts: F.pts(frame: 1)) }
    }

    @Test("SPS and PPS sent in band are remembered for a later bare IDR, never doubled, put first; a new in-band SPS replaces the old")
    func inBandParameterSets() throws {
        var packetizer = H264Packetizer()
        let sei = F.nal(0x06, size: 8)
        let first = try packetizer.packetize(F.annexB([sei, F.sps, F.pps, F.idr]), pts: F.pts(frame: 0))
        #expect(first.payloads.map(Array.init) == [H264DepacketizerTests.stapA([F.sps, F.pps, sei, F.idr])])
        #expect(packetizer.parameterSetsInserted == 0)
        let bare = try packetizer.packetize(F.annexB([F.idr]), pts: F.pts(frame: 1))
        #expect(bare.payloads.map(Array.init) == [H264DepacketizerTests.stapA([F.sps, F.pps, F.idr])])
        #expect(packetizer.parameterSetsInserted == 1)
        let newSPS = hex("67 64 00 28 ac")
        let delta = try packetizer.packetize(F.annexB([newSPS, F.slice]), pts: F.pts(frame: 2))
        #expect(delta.payloads.map(Array.init) == [H264DepacketizerTests.stapA([newSPS, F.slice])])
        let later = try packetizer.packetize(F.annexB([F.idr]), pts: F.pts(frame: 3))
        #expect(later.payloads.map(Array.init) == [H264DepacketizerTests.stapA([newSPS, F.pps, F.idr])])
        #expect(packetizer.parameterSets == H264ParameterSets(sequenceParameterSets: [newSPS], pictureParameterSets: [F.pps]))
        // Out of band again (the encoder was reopened).
        packetizer.setParameterSets(.init(sequenceParameterSets: [F.sps], pictureParameterSets: [hex("68 ee")]))
        let reopened = try packetizer.packetize(F.annexB([F.idr]), pts: F.pts(frame: 4))
        #expect(reopened.payloads.map(Array.init) == [H264DepacketizerTests.stapA([F.sps, hex("68 ee"), F.idr])])
    }

    @Test("an IDR with no parameter sets known goes as it is, and is counted")
    func idrWithoutParameterSets() throws {
        var packetizer = H264Packetizer()
        let frame = try packetizer.packetize(F.annexB([F.idr]), pts: F.pts(frame: 0))
        #expect(frame.payloads.map(Array.init) == [F.idr])
        #expect(frame.isKeyframe)
        #expect(packetizer.keyframesWithoutParameterSets == 1)
        #expect(packetizer.parameterSetsInserted == 0)
    }

    @Test("malformed length-prefixed units and extradata are refused with what is wrong")
    func malformed() throws {
        var packetizer = H264Packetizer()
        #expect(throws: PacketizerError.truncatedLengthPrefix(offset: 0)) {
            try packetizer.packetize(hex("00 00 00 09 41 9a"), format: .lengthPrefixed(lengthSize: 4), pts: F.pts(frame: 0))
        }
        #expect(throws: PacketizerError.truncatedLengthPrefix(offset: 6)) {
            try packetizer.packetize(hex("00 00 00 02 41 9a 00 00"), format: .lengthPrefixed(lengthSize: 4), pts: F.pts(frame: 0))
        }
        #expect(throws: PacketizerError.invalidLengthSize(3)) {
            try packetizer.packetize(hex("00 00 02 41 9a"), format: .lengthPrefixed(lengthSize: 3), pts: F.pts(frame: 0))
        }
        #expect(throws: PacketizerError.noNALUnits) {
            try packetizer.packetize(hex("00 00 00 00"), format: .lengthPrefixed(lengthSize: 4), pts: F.pts(frame: 0))
        }
        let avcC = F.avcC(sps: F.sps, pps: F.pps)
        for bad in [[], hex("ff 00 01"), Array(avcC.dropLast()), Array(avcC.prefix(5)), F.annexB([F.sps]),
                    Array(F.avcC(sps: F.sps, pps: F.pps).prefix(16)) + [0]] {
            #expect(throws: PacketizerError.malformedExtradata, "\(hexString(Array(bad)))") { try H264ParameterSets(extradata: Array(bad)) }
        }
        #expect(throws: PacketizerError.invalidLengthSize(3)) { try H264ParameterSets(extradata: F.avcC(sps: F.sps, pps: F.pps, lengthSize: 3)) }
        // SEI in Annex B extradata is skipped.
        #expect(try H264ParameterSets(extradata: F.annexB([F.sps, hex("06 05 01 80"), F.pps])).sequenceParameterSets == [F.sps])
    }

    /// One generated access unit.
    struct GeneratedUnit: CustomStringConvertible {
        var nals: [[UInt8]]
        var fourByteStartCodes: [Bool]
        var description: String { nals.map { "\($0[0] & 0x1F):\($0.count)" }.joined(separator: " ") }
    }

    @Test("generated access units and limits: payloads within the limit, greedy aggregation, even fragments, marker last, and the depacketizer gives back each access unit with SPS/PPS before every IDR (seed printed on failure)")
    func generated() {
        for (maxPayloadSize, count) in [(3, 5), (17, 20), (200, 40), (1200, 40)] {
            let failure = PropertyCheck.check(seeds: PropertyCheck.seeds(count: count, base: 44_100_000 + UInt64(maxPayloadSize) * 100),
                                              generate: { random in
                (0..<Int.random(in: 1...12, using: &random)).map { _ in
                    let count = Int.random(in: 1...8, using: &random)
                    let nals = (0..<count).map { _ in
                        let type = [1, 1, 1, 5, 5, 6, 7, 8, 9, 12].randomElement(using: &random)!
                        let nri = UInt8.random(in: 0...3, using: &random) << 5
                        let size = [Int.random(in: 1...20, using: &random), Int.random(in: 1...400, using: &random),
                                    Int.random(in: 1...3000, using: &random)].randomElement(using: &random)!
                        return [nri | UInt8(type)] + Self.randomNonZero(size - 1, using: &random)
                    }
                    return GeneratedUnit(nals: nals, fourByteStartCodes: nals.map { _ in Bool.random(using: &random) })
                }
            }, property: { units in Self.checkRoundTrip(units, maxPayloadSize: maxPayloadSize) })
            if let failure { Issue.record("max payload \(maxPayloadSize): \(failure)") }
        }
    }

    static func randomNonZero(_ count: Int, using random: inout SeededGenerator) -> [UInt8] {
        (0..<max(0, count)).map { _ in UInt8.random(in: 1...255, using: &random) }
    }

    /// Packetizes, sends through an RTPSendStream across the sequence wrap, parses and
    /// depacketizes; nil when every invariant holds.
    static func checkRoundTrip(_ units: [GeneratedUnit], maxPayloadSize: Int) -> String? {
        var packetizer = H264Packetizer(maxPayloadSize: maxPayloadSize)
        guard var stream = try? RTPSendStream(configuration: .init(ssrc: 5, payloadType: 102, clockRate: 90_000),
                                              initialSequenceNumber: 65_530, timestampOffset: UInt32.max - 5000)
        else { return "stream" }
        var sequences = SequenceUnwrapper()
        var timestamps = TimestampUnwrapper()
        var depacketizer = H264Depacketizer()
        var output: [DepacketizerEvent] = []
        var expected: [[UInt8]] = []
        var sps: [[UInt8]] = []
        var pps: [[UInt8]] = []
        var datagram: [UInt8] = []
        for (number, unit) in units.enumerated() {
            let bytes = unit.nals.enumerated().flatMap { index, nal -> [UInt8] in (unit.fourByteStartCodes[index] ? [0] : []) + [0, 0, 1] + nal }
            // The model: delimiters and filler out; in-band SPS/PPS remembered; an IDR opens with them.
            let kept = unit.nals.filter { ![9, 12].contains($0[0] & 0x1F) }
            let types = kept.map { $0[0] & 0x1F }
            if types.contains(7) { sps = kept.filter { $0[0] & 0x1F == 7 } }
            if types.contains(8) { pps = kept.filter { $0[0] & 0x1F == 8 } }
            let isKeyframe = types.contains(5)
            let sent = isKeyframe ? sps + pps + kept.filter { ![7, 8].contains($0[0] & 0x1F) } : kept
            let frame: PacketizedFrame
            do {
                frame = try packetizer.packetize(bytes, pts: SendFixtures.pts(frame: Int64(number)))
            } catch {
                if kept.isEmpty, error == .noNALUnits { continue }
                return "unit \(number): \(error)"
            }
            if kept.isEmpty { return "unit \(number) of delimiters and filler was packetized" }
            expected.append(sent.flatMap { [0, 0, 0, 1] + $0 })
            if frame.isKeyframe != isKeyframe { return "unit \(number): keyframe \(frame.isKeyframe)" }
            if frame.timestamp != Int64(number) * 3000 { return "unit \(number): timestamp \(frame.timestamp)" }
            if let problem = checkLayout(frame, units: sent, maxPayloadSize: maxPayloadSize) { return "unit \(number): \(problem)" }
            for index in 0..<frame.packetCount {
                stream.writePacket(frame, index: index, now: Int64(number) * 33_000, into: &datagram)
                guard let packet = try? RTPPacket(parsing: datagram) else { return "unit \(number): unparsable packet" }
                if packet.marker != (index == frame.packetCount - 1) { return "unit \(number): marker on packet \(index)" }
                guard let sequence = sequences.unwrap(packet.sequenceNumber).extended else { return "sequence refused" }
                output += depacketizer.push(payload: packet.payload, sequence: sequence,
                                            timestamp: timestamps.unwrap(packet.timestamp), marker: packet.marker)
            }
        }
        output += depacketizer.flush()
        if !discards(output).isEmpty { return "discarded: \(discards(output))" }
        let received = frames(output)
        if received.map(\.data) != expected { return "depacketized \(received.map(\.data.count)), expected \(expected.map(\.count))" }
        if !received.allSatisfy(\.isComplete) { return "an incomplete frame" }
        return nil
    }

    /// Every payload within the limit; single, STAP-A and FU-A payloads that spell out `units`
    /// in order; no STAP-A or single packet that the next unit would still have fitted into;
    /// fragments of one unit within a byte of each other.
    static func checkLayout(_ frame: PacketizedFrame, units: [[UInt8]], maxPayloadSize: Int) -> String? {
        var unitIndex = 0
        var previousAggregateSize: Int?
        var index = 0
        while index < frame.packetCount {
            let payload = Array(frame.payload(at: index))
            if payload.count > maxPayloadSize || payload.isEmpty { return "payload \(index) of \(payload.count) bytes" }
            if frame.marker(at: index) != (index == frame.packetCount - 1) { return "marker on \(index)" }
            let type = payload[0] & 0x1F
            if type == 28 {
                previousAggregateSize = nil
                var sizes: [Int] = []
                var body: [UInt8] = []
                while index < frame.packetCount {
                    let piece = Array(frame.payload(at: index))
                    guard piece.count >= 2 else { return "FU-A fragment of \(piece.count) bytes" }
                    sizes.append(piece.count - 2)
                    body += piece.dropFirst(2)
                    index += 1
                    if piece[1] & 0x40 != 0 { break }
                }
                guard unitIndex < units.count, [payload[0] & 0xE0 | payload[1] & 0x1F] + body == units[unitIndex] else {
                    return "fragments do not spell unit \(unitIndex)"
                }
                if (sizes.max() ?? 0) - (sizes.min() ?? 0) > 1 { return "uneven fragments \(sizes)" }
                if units[unitIndex].count <= maxPayloadSize { return "unit \(unitIndex) fragmented though it fits" }
                unitIndex += 1
                continue
            }
            let contained: [[UInt8]]
            if type == 24 {
                var parts: [[UInt8]] = []
                var offset = 1
                while offset < payload.count {
                    guard offset + 2 <= payload.count else { return "STAP-A size cut short" }
                    let size = Int(payload[offset]) << 8 | Int(payload[offset + 1])
                    guard offset + 2 + size <= payload.count else { return "STAP-A unit runs past the payload" }
                    parts.append(Array(payload[(offset + 2)..<(offset + 2 + size)]))
                    offset += 2 + size
                }
                if parts.count < 2 { return "STAP-A of one unit" }
                contained = parts
            } else {
                contained = [payload]
            }
            if let previousAggregateSize, previousAggregateSize + 2 + contained[0].count <= maxPayloadSize {
                return "unit \(unitIndex) would have fitted in the packet before"
            }
            for unit in contained {
                guard unitIndex < units.count, unit == units[unitIndex] else { return "packet \(index) does not hold unit \(unitIndex)" }
                unitIndex += 1
            }
            previousAggregateSize = 1 + contained.reduce(0) { $0 + 2 + $1.count }
            index += 1
        }
        return unitIndex == units.count ? nil : "\(units.count - unitIndex) units missing"
    }
}

struct OpusPacketizerTests {
    @Test("one packet per Opus frame at 48 kHz from the pts; the marker on the first and after a silence; through the depacketizer unchanged")
    func packets() throws {
        var packetizer = OpusPacketizer()
        var depacketizer = OpusDepacketizer()
        var events: [DepacketizerEvent] = []
        var sent: [PacketizedFrame] = []
        for number in 0..<5 {
            let payload = [UInt8(0xFC), UInt8(number), 0xAA]
            let frame = try packetizer.packetize(payload, pts: MediaTime(ticks: Int64(number) * 20_000, timeBase: MediaTime.microseconds),
                                                 afterSilence: number == 3)
            sent.append(frame)
            #expect(frame.packetCount == 1)
            events += depacketizer.push(payload: Array(frame.payload(at: 0)), sequence: Int64(number), timestamp: frame.timestamp)
        }
        #expect(sent.map(\.timestamp) == [0, 960, 1920, 2880, 3840])
        #expect(sent.map { $0.marker(at: 0) } == [true, false, false, true, false])
        #expect(sent.allSatisfy { $0.isKeyframe && $0.codec == .opus && $0.mediaType == .audio })
        #expect(frames(events).map(\.data) == (0..<5).map { [0xFC, UInt8($0), 0xAA] })
        #expect(try packetizer.packetize([1], pts: MediaTime(ticks: 441, timeBase: Rational(1, 44_100))).timestamp == 480)
        #expect(throws: PacketizerError.emptyPayload) { try packetizer.packetize([], pts: .zero) }
        #expect(packetizer.packetsPacketized == 6)
    }
}
