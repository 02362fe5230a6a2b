// Generated sequences against a model of what a viewer's decoder needs: viewers join and
// leave a composition's feed, frames (keyframes and deltas of 1–40 packets) and Opus come,
// time passes, and each viewer's transport drains its outlet and sends RTCP — diligently
// (after every frame), lazily (at random), or not at all for seconds. What each viewer
// receives is reassembled as a player would (RTP parsed, H.264 depacketized) and checked:
//
//   - every picture whole, in order, each carrying the index it was made with;
//   - the first a keyframe, and after any picture it missed, the next one a keyframe;
//   - RTP sequence numbers without gaps (frames dropped before sending leave none);
//   - nothing after it left;
//   - a diligent viewer gets exactly every picture from the first keyframe after it joined,
//     and every Opus frame after that.
//
// Seeded and shrunk (TestSupport's PropertyCheck); `STAGE_SEQUENCE_SEED=<seed>` replays one.

import MediaCore
import Testing
import TestSupport
import WHEP
import WebRTCMedia

private enum OutletStep: CustomStringConvertible {
    case join(Int, diligent: Bool)
    case leave(Int)
    case video(key: Bool, packets: Int)
    case audio
    case advance(milliseconds: Int)
    case rtcp(Int)
    case drain(Int)

    var description: String {
        switch self {
        case .join(let viewer, let diligent): "join \(viewer)\(diligent ? " diligent" : " lazy")"
        case .leave(let viewer): "leave \(viewer)"
        case .video(let key, let packets): "\(key ? "keyframe" : "delta") of \(packets) packets"
        case .audio: "opus"
        case .advance(let ms): "+\(ms) ms"
        case .rtcp(let viewer): "rtcp \(viewer)"
        case .drain(let viewer): "drain \(viewer)"
        }
    }
}

/// One viewer as the model and its player see it.
private final class ModelViewer {
    let outlet: WHEPViewerOutlet
    let diligent: Bool
    var left = false
    /// Video frames offered to it (indices, in order) and which were keyframes.
    var offered: [Int] = []
    var audioOffered: [Int] = []
    var depacketizer = H264Depacketizer()
    var received: [Int] = []
    var audioReceived: [Int] = []
    var lastSequence: [UInt32: UInt16] = [:]
    var videoSequence: Int64 = 0
    var problems: [String] = []

    init(outlet: WHEPViewerOutlet, diligent: Bool) {
        self.outlet = outlet
        self.diligent = diligent
    }
}

@Suite struct WHEPOutletSequenceTests {
    static let videoSSRC: UInt32 = 0x1111, audioSSRC: UInt32 = 0x2222

    private static func generate(_ random: inout SeededGenerator) -> [OutletStep] {
        var steps: [OutletStep] = []
        let diligent = Bool.random(using: &random)
        steps.append(.join(0, diligent: diligent))
        for _ in 0..<Int.random(in: 80...260, using: &random) {
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<3: steps.append(.join(Int.random(in: 0..<4, using: &random), diligent: Bool.random(using: &random)))
            case 3..<5: steps.append(.leave(Int.random(in: 0..<4, using: &random)))
            case 5..<40:
                steps.append(.video(key: Int.random(in: 0..<12, using: &random) == 0, packets: Int.random(in: 1...40, using: &random)))
                steps.append(.advance(milliseconds: 33))
            case 40..<55: steps.append(.audio)
            case 55..<62: steps.append(.advance(milliseconds: [100, 600, 3500][Int.random(in: 0..<3, using: &random)]))
            case 62..<75: steps.append(.rtcp(Int.random(in: 0..<4, using: &random)))
            default: steps.append(.drain(Int.random(in: 0..<4, using: &random)))
            }
        }
        return steps
    }

    /// A picture whose NAL carries `index` (4 bytes after the header), about `packets` RTP packets long.
    private static func accessUnit(index: Int, key: Bool, packets: Int) -> [UInt8] {
        let size = max(8, packets * 1_150 - 100)
        let tag = (0..<4).map { UInt8(truncatingIfNeeded: index >> (24 - 8 * $0)) }
        let nal = [key ? 0x65 : 0x41] + tag + [UInt8](repeating: 0xAB, count: size - 5)
        let parameterSets: [[UInt8]] = key ? [[0x67, 0x42, 0xC0, 0x1F, 0xDA, 0x01, 0x40, 0x16], [0x68, 0xCE, 0x3C, 0x80]] : []
        return (parameterSets + [nal]).flatMap { [0, 0, 0, 1] + $0 }
    }

    /// The index a reassembled picture carries (its slice NAL's 4 bytes after the header).
    private static func index(of data: [UInt8]) -> Int? {
        var offset = 0
        while offset + 9 <= data.count {
            if data[offset..<(offset + 4)] == [0, 0, 0, 1], data[offset + 4] & 0x1F == 5 || data[offset + 4] & 0x1F == 1 {
                return data[(offset + 5)..<(offset + 9)].reduce(0) { $0 << 8 | Int($1) }
            }
            offset += 1
        }
        return nil
    }

    /// Runs the steps; nil when every viewer's stream satisfies the model.
    /// What the sequences reached: a test that never drops a viewer to a keyframe checks little.
    final class Coverage: @unchecked Sendable {
        var backlogsDropped: Int64 = 0
        var framesSkipped: Int64 = 0
        var diligentPictures = 0
        var lazyPictures = 0
    }

    private static func property(_ steps: [OutletStep], coverage: Coverage) -> String? {
        var viewers: [Int: ModelViewer] = [:]
        var everyone: [ModelViewer] = []
        var now: Int64 = 1_000_000
        var video = H264Packetizer()
        var opus = OpusPacketizer()
        var frameIndex = 0, audioIndex = 0
        var keyframes: Set<Int> = []
        var out: [WHEPDatagram] = []

        func drain(_ viewer: ModelViewer) {
            out.removeAll()
            viewer.outlet.due(now: now, limit: 10_000, into: &out)
            if viewer.left, !out.isEmpty { viewer.problems.append("\(out.count) datagrams after it left") }
            for datagram in out where !datagram.isRTCP {
                guard let packet = try? RTPPacket(parsing: datagram.bytes) else {
                    viewer.problems.append("an RTP packet that does not parse")
                    continue
                }
                if let last = viewer.lastSequence[packet.ssrc], packet.sequenceNumber != last &+ 1 {
                    viewer.problems.append("sequence \(last) then \(packet.sequenceNumber) on \(packet.ssrc)")
                }
                viewer.lastSequence[packet.ssrc] = packet.sequenceNumber
                if packet.ssrc == audioSSRC {
                    viewer.audioReceived.append(Int(packet.payload.last ?? 0))
                    continue
                }
                viewer.videoSequence += 1  // in order and gapless (checked above): the 16-bit numbers extended
                let events = viewer.depacketizer.push(payload: packet.payload, sequence: viewer.videoSequence,
                                                      timestamp: Int64(packet.timestamp), marker: packet.marker)
                for case .frame(let frame) in events {
                    guard frame.isComplete, let index = index(of: frame.data) else {
                        viewer.problems.append("an incomplete or unreadable picture after \(viewer.received.last ?? -1)")
                        continue
                    }
                    viewer.received.append(index)
                }
            }
        }

        func feedback(_ viewer: ModelViewer) {
            var answers: [WHEPDatagram] = []
            let report = (try? RTCPPacket.serializeCompound([.receiverReport(RTCPReceiverReport(ssrc: 5))])) ?? []
            _ = viewer.outlet.feedback(report, now: now, into: &answers)
        }

        for step in steps {
            switch step {
            case .join(let id, let diligent):
                guard viewers[id] == nil,
                      let outlet = try? WHEPViewerOutlet(streams: WHEPViewerStreams(
                          video: RTPSendStreamConfiguration(ssrc: videoSSRC, payloadType: 102, clockRate: 90_000),
                          audio: RTPSendStreamConfiguration(ssrc: audioSSRC, payloadType: 111, clockRate: 48_000), cname: "m"))
                else { continue }
                let viewer = ModelViewer(outlet: outlet, diligent: diligent)
                viewers[id] = viewer
                everyone.append(viewer)
                feedback(viewer)
            case .leave(let id):
                guard let viewer = viewers.removeValue(forKey: id) else { continue }
                viewer.outlet.end()
                viewer.left = true
                drain(viewer)
            case .video(let key, let packets):
                guard let frame = try? video.packetize(accessUnit(index: frameIndex, key: key, packets: packets), format: .annexB,
                                                       pts: MediaTime(ticks: Int64(frameIndex), timeBase: Rational(1, 30))) else {
                    return "the packetizer refused frame \(frameIndex)"
                }
                if key { keyframes.insert(frameIndex) }
                for viewer in viewers.values {
                    viewer.offered.append(frameIndex)
                    viewer.outlet.enqueue(frame, now: now)
                    if viewer.diligent {
                        feedback(viewer)
                        drain(viewer)
                    }
                }
                frameIndex += 1
            case .audio:
                guard let frame = try? opus.packetize([0xFC, UInt8(truncatingIfNeeded: audioIndex)],
                                                      pts: MediaTime(ticks: Int64(audioIndex) * 960, timeBase: Rational(1, 48_000))) else {
                    return "the Opus packetizer refused"
                }
                for viewer in viewers.values {
                    viewer.audioOffered.append(audioIndex & 0xFF)
                    viewer.outlet.enqueue(frame, now: now)
                    if viewer.diligent {
                        feedback(viewer)
                        drain(viewer)
                    }
                }
                audioIndex += 1
            case .advance(let ms):
                now += Int64(ms) * 1_000
                // A diligent viewer's transport runs on time: RTCP at least every second, drained.
                for viewer in viewers.values where viewer.diligent {
                    feedback(viewer)
                    drain(viewer)
                }
            case .rtcp(let id):
                if let viewer = viewers[id] { feedback(viewer) }
            case .drain(let id):
                if let viewer = viewers[id] { drain(viewer) }
            }
        }

        for viewer in everyone {
            coverage.backlogsDropped += viewer.outlet.counters.backlogsDropped
            coverage.framesSkipped += viewer.outlet.counters.framesSkipped
            if viewer.diligent { coverage.diligentPictures += viewer.received.count } else { coverage.lazyPictures += viewer.received.count }
        }
        for (number, viewer) in everyone.enumerated() {
            let name = "viewer #\(number) (\(viewer.diligent ? "diligent" : "lazy"))"
            if let problem = viewer.problems.first { return "\(name): \(problem)" }
            let received = viewer.received
            if let first = received.first, !keyframes.contains(first) { return "\(name): first picture \(first) is not a keyframe" }
            if received != received.sorted() || Set(received).count != received.count { return "\(name): pictures out of order \(received)" }
            let position = Dictionary(uniqueKeysWithValues: viewer.offered.enumerated().map { ($1, $0) })
            for (previous, next) in zip(received, received.dropFirst()) {
                guard let a = position[previous], let b = position[next] else { return "\(name): got \(next), never offered" }
                if b != a + 1, !keyframes.contains(next) { return "\(name): delta \(next) after \(previous), having missed \(b - a - 1)" }
            }
            if viewer.diligent {
                let expected = Array(viewer.offered.drop { !keyframes.contains($0) })
                if received != expected { return "\(name): got \(received), a diligent viewer should get \(expected)" }
                if viewer.audioReceived != viewer.audioOffered { return "\(name): Opus \(viewer.audioReceived) of \(viewer.audioOffered)" }
            }
        }
        return nil
    }

    @Test("viewers joining, leaving, reading and stalling at random: each gets decodable pictures; a diligent one, all of them")
    func generatedSequences() {
        let coverage = Coverage()
        let failure = PropertyCheck.check(seeds: PropertyCheck.seeds(count: 200, base: 44_000_000), generate: { random in
            Self.generate(&random)
        }, property: { Self.property($0, coverage: coverage) })
        #expect(failure == nil, "\(failure.map { "\($0)" } ?? "")")
        if failure == nil, PropertyCheck.seeds(count: 2, base: 0).count == 2 {
            #expect(coverage.backlogsDropped > 20 && coverage.framesSkipped > 100 && coverage.diligentPictures > 1_000
                    && coverage.lazyPictures > 1_000,
                    "reach: \(coverage.backlogsDropped) backlogs dropped, \(coverage.framesSkipped) frames skipped, pictures \(coverage.diligentPictures) diligent, \(coverage.lazyPictures) lazy")
        }
    }
}
