// A simulcast publisher as a browser sends it: two layers of real H.264 (made by ffmpeg) on
// SSRCs the offer did not announce, named by the rid header extension on their first
// packets, RTX on its own SSRC named by the repaired rid. The receiver must deliver the
// larger layer only, repair it, ask only it for keyframes, and fall back to the smaller one
// when it stops.
import Testing
import TestSupport
import WebRTCMedia
@testable import WebRTCPublisher
import WebRTCSignal

/// The receiver tests' offer, its video section sending two layers named by rids instead of
/// announced SSRCs.
private let simulcastOffer = offer
    .replacing("a=mid:1\r\n", with: """
        a=mid:1\r
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid\r
        a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id\r
        a=extmap:11 urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id\r

        """)
    .replacing("a=ssrc-group:FID 2222 3333\r\na=ssrc:2222 cname:sender\r\na=ssrc:3333 cname:sender\r\n",
               with: "a=rid:q send\r\na=rid:f send\r\na=simulcast:send q;f\r\n")

@Suite(.serialized)
struct SimulcastReceiverTests {
    static let smallSSRC: UInt32 = 501, largeSSRC: UInt32 = 502, largeRTXSSRC: UInt32 = 503

    struct Layer {
        var ssrc: UInt32
        var rid: String
        var frames: [[UInt8]]
        var sequence: UInt16
        var base: UInt32
        /// Sends its frames up to this time (µs).
        var until: Int64
    }

    @Test("the larger layer is delivered, repaired through RTX named by its repaired rid; the smaller one takes over when it stops")
    func largestLayer() async throws {
        let seconds = 5
        let large = try await onThread { try SenderMedia.make(seconds: seconds, size: "320x240") }
        let small = try await onThread { try SenderMedia.make(seconds: seconds, size: "160x120") }
        let negotiation = try SDPNegotiator.negotiate(offer: simulcastOffer, options: SDPAnswerOptions(
            localCredentials: IceCredentials(ufrag: "loca", pwd: "localpasswordlocalpasswo"),
            localFingerprintSHA256: String(repeating: "AB:", count: 31) + "AB",
            candidate: TransportAddress(ip: .ipv4(127, 0, 0, 1), port: 40_000), sessionID: 1))
        #expect(negotiation.video?.simulcastRids == ["q", "f"])
        var receiver = PublisherMediaReceiver(negotiation: negotiation, configuration: PublisherMediaReceiverConfiguration(senderSSRC: 9))
        var random = SeededGenerator(seed: 7)

        // The large layer stops at 2.5 s, as a sender does when its bandwidth estimate falls.
        var layers = [Layer(ssrc: Self.smallSSRC, rid: "q", frames: small.videoFrames, sequence: 100, base: 1_000, until: 10_000_000),
                      Layer(ssrc: Self.largeSSRC, rid: "f", frames: large.videoFrames, sequence: 40_000, base: 77_777, until: 2_500_000)]
        var events: [(at: Int64, bytes: [UInt8])] = []
        var history: [UInt16: RTPPacket] = [:]
        var lost = 0
        for index in 0..<(seconds * 30) {
            let capture = Int64(index) * 1_000_000 / 30
            for layerIndex in layers.indices where capture < layers[layerIndex].until {
                let payloads = SenderMedia.packetize(layers[layerIndex].frames[index])
                for (number, payload) in payloads.enumerated() {
                    var layer = layers[layerIndex]
                    // The rid goes on the first packets only (until receiver reports name the SSRC).
                    let ridElement = layer.sequence < (layer.ssrc == Self.smallSSRC ? 110 : 40_010)
                        ? [RTPHeaderExtensionElement(id: 10, data: Array(layer.rid.utf8))] : []
                    let packet = RTPPacket(marker: number == payloads.count - 1, payloadType: 102, sequenceNumber: layer.sequence,
                                           timestamp: layer.base &+ UInt32(capture * 90 / 1_000), ssrc: layer.ssrc,
                                           headerExtension: ridElement.isEmpty ? nil : .oneByte(ridElement), payload: payload)
                    layer.sequence &+= 1
                    layers[layerIndex] = layer
                    if layer.ssrc == Self.largeSSRC {
                        history[packet.sequenceNumber] = packet
                        // 4 % of the large layer's packets are lost once, none of its first ones.
                        if packet.sequenceNumber > 40_010, Int.random(in: 0..<100, using: &random) < 4 {
                            lost += 1
                            continue
                        }
                    }
                    events.append((capture + 20_000 + Int64(number) * 100, try packet.serialized()))
                }
            }
        }
        events.sort { $0.at < $1.at }

        var delivered: [(at: Int64, unit: ReceivedAccessUnit)] = []
        var plis: [(at: Int64, ssrc: UInt32)] = []
        var rtxSequence: UInt16 = 3
        var cursor = 0
        var now: Int64 = 0
        let end = Int64(seconds) * 1_000_000
        while now < end {
            let next = cursor < events.count ? events[cursor].at : end
            now = min(next, receiver.nextDeadline.map { max($0, now) } ?? end, end)
            while cursor < events.count, events[cursor].at <= now {
                delivered += receiver.receiveRTP(events[cursor].bytes, now: now).compactMap(\.accessUnit).map { (now, $0) }
                cursor += 1
            }
            for output in receiver.poll(now: now) {
                switch output {
                case .accessUnit(let unit): delivered.append((now, unit))
                case .rtcp(let compound):
                    for packet in try RTCPPacket.parseCompound(compound) {
                        switch packet {
                        case .pictureLossIndication(let pli): plis.append((now, pli.mediaSSRC))
                        case .genericNack(let nack):
                            #expect(nack.mediaSSRC == Self.largeSSRC)
                            // RTX on an SSRC the offer never named: the repaired rid says whose it is.
                            for sequence in NackPacker.unpack(nack.pairs) {
                                guard var wrapped = history[sequence].map({ RTXUnwrapper.wrap($0, rtxSSRC: Self.largeRTXSSRC, rtxPayloadType: 103,
                                                                                              rtxSequenceNumber: rtxSequence) }) else { continue }
                                wrapped.headerExtension = .oneByte([RTPHeaderExtensionElement(id: 11, data: Array("f".utf8))])
                                rtxSequence &+= 1
                                let at = now + 15_000
                                let index = events[cursor...].firstIndex { $0.at > at } ?? events.count
                                events.insert((at, try wrapped.serialized()), at: index)
                            }
                        default: break
                        }
                    }
                }
            }
            if now == end { break }
        }

        let video = delivered.filter { $0.unit.kind == .video }
        func isLarge(_ unit: ReceivedAccessUnit) -> Bool { large.videoFrames.contains(unit.data) }
        func isSmall(_ unit: ReceivedAccessUnit) -> Bool { small.videoFrames.contains(unit.data) }
        #expect(video.allSatisfy { isLarge($0.unit) || isSmall($0.unit) })
        // Both layers start with a keyframe; from the large one's first frame until it stops,
        // every frame delivered is the large layer's, all of them, repaired.
        let firstLarge = try #require(video.firstIndex { isLarge($0.unit) })
        #expect(firstLarge <= 1 && video[firstLarge].unit.isKeyframe)
        let largeRun = video[firstLarge...].prefix { isLarge($0.unit) }
        #expect(largeRun.count == 75, "2.5 s of the large layer")
        #expect(largeRun.map(\.unit.data) == Array(large.videoFrames[0..<75]))
        #expect(lost > 5 && receiver.statistics.recoveredByNack == Int64(lost))
        // Then the small layer, from a keyframe, to the end.
        let rest = video[(firstLarge + largeRun.count)...]
        #expect(rest.first?.unit.isKeyframe == true)
        #expect(rest.allSatisfy { isSmall($0.unit) })
        #expect(rest.count >= 25)
        // Switched within 1 s of silence plus the keyframe the small layer was asked for (it
        // has one a second: frame 90 or 120).
        let switchedAt = try #require(rest.first?.at)
        #expect(switchedAt > 3_500_000 && switchedAt < 4_200_000, "switched at \(switchedAt)")
        // Keyframe requests: both layers on joining; the small one again only once the large one was silent.
        #expect(plis.contains { $0.ssrc == Self.largeSSRC })
        let smallRequests = plis.filter { $0.ssrc == Self.smallSSRC }.map(\.at)
        #expect(smallRequests.contains { $0 < 200_000 }, "on joining")
        #expect(!smallRequests.contains { $0 > 200_000 && $0 < 3_500_000 }, "not while the large layer was in use: \(smallRequests)")
        #expect(smallRequests.contains { $0 >= 3_500_000 }, "when it fell silent")

        let statistics = receiver.statistics
        #expect(statistics.simulcastLayers == 2)
        // q first if its keyframe completed first, then f; q again at the end.
        #expect(statistics.simulcastSwitches == (isSmall(video[0].unit) ? 2 : 1))
        #expect(statistics.simulcastRid == "q")
        #expect(statistics.videoWidth == 160 && statistics.videoHeight == 120)
        #expect(statistics.framesOfOtherLayers > 60)
        #expect(statistics.unknownPackets == 0)
    }
}
