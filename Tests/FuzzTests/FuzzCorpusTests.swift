// The fuzz targets' corpora (Corpus/<target>/: generated seeds and what libFuzzer found and
// `make fuzz` merged) replayed through each target: a trap or a broken bound in any of them
// fails the suite. Also the seeds of the WHIP, STUN/SDP and API targets (the RTMP session's
// come from RTMPTests, whose client makes them).
import APIModels
import Foundation
@testable import FuzzTargets
import TestSupport
import Testing
import WebRTCMedia
import WebRTCSignal

struct FuzzCorpusTests {
    @Test("every corpus input replays through its target with no trap and no bound broken",
          arguments: FuzzTarget.allCases)
    func corpusReplays(_ target: FuzzTarget) throws {
        let directory = FuzzSeeds.corpusRoot.appendingPathComponent(target.rawValue)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(names.count >= 3, "the \(target.rawValue) corpus has \(names.count) inputs")
        for name in names {
            target.run([UInt8](try Data(contentsOf: directory.appendingPathComponent(name))))
        }
    }

    @Test("the whip-media, whep-viewer, stun-sdp and api-bodies seeds are what the generators make (FUZZ_REGENERATE_SEEDS=1 rewrites them)")
    func seedsAreCurrent() throws {
        var problems = try FuzzSeeds.staleSeeds(target: "whip-media", seeds: WHIPSeeds.generate())
        problems += try FuzzSeeds.staleSeeds(target: "whep-viewer", seeds: WHEPViewerSeeds.generate())
        problems += try FuzzSeeds.staleSeeds(target: "stun-sdp", seeds: SignallingSeeds.generate())
        problems += try FuzzSeeds.staleSeeds(target: "api-bodies", seeds: APISeeds.generate())
        #expect(problems.isEmpty, "\(problems)")
    }

    /// What each seed must reach: a seed that stops early fuzzes nothing deep.
    static let expectedReach: [(target: FuzzTarget, prefix: String, accepted: Int, mediaPackets: Int)] = [
        (.rtmpParsers, "digest", 0, 5),
        (.rtmpParsers, "ffmpeg", 0, 10),
        (.rtmpSession, "seed-simple-publish-reads-35", 1, 10),
        (.rtmpSession, "seed-ffmpeg-5.1-publish", 1, 20),
        // Delta frames only: the stage waits for a keyframe that never comes.
        (.rtmpSession, "seed-digest-publish", 1, 0),
        (.rtmpSession, "seed-timestamp-flood", 1, 5),
        (.rtmpSession, "seed-zero-length-flood", 1, 0),
        (.rtmpSession, "seed-sequence-header-changes", 1, 40),
        (.whipMedia, "seed-h264-opus-2s", 1, 120),
        (.whipMedia, "seed-h264-opus-timestamps-jump", 1, 10),
        (.whipMedia, "seed-ssrc-flood", 1, 0),
        (.whipMedia, "seed-chrome-offer", 1, 40),
        (.whipMedia, "seed-simulcast", 1, 0),
        (.whepViewer, "seed-chromium-session", 1, 200),
        (.whepViewer, "seed-aiortc-session", 1, 150),
        (.whepViewer, "seed-nack-flood", 1, 50),
        (.whepViewer, "seed-fir-repeats", 1, 50),
        // Silent after its first second: held back, then dropped to keyframes.
        (.whepViewer, "seed-silent-viewer", 1, 50),
        (.stunSDP, "seed-sdp-", 1, 0),
        (.stunSDP, "seed-sdp-whep-", 1, 0),
        (.stunSDP, "seed-stun-checks", 1, 0),
        (.apiBodies, "seed-valid-", 1, 0),
    ]

    @Test("every seed gets deep into its target: publishes admitted, offers negotiated, media on the stage, ICE connected, bodies valid")
    func seedsReachDeep() throws {
        for expected in Self.expectedReach {
            let directory = FuzzSeeds.corpusRoot.appendingPathComponent(expected.target.rawValue)
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix(expected.prefix) }
            #expect(!names.isEmpty, "\(expected.target.rawValue)/\(expected.prefix)*")
            for name in names {
                let reach = expected.target.run([UInt8](try Data(contentsOf: directory.appendingPathComponent(name))))
                #expect(reach.accepted >= expected.accepted && reach.mediaPackets >= expected.mediaPackets,
                        "\(expected.target.rawValue)/\(name): \(reach)")
            }
        }
    }
}

/// A WHIP publisher's first seconds: the offer, then H.264 (a STAP-A of SPS and PPS, an IDR in
/// FU-A fragments, single-NAL delta frames, one lost packet and its RTX), Opus every 20 ms and
/// sender reports; plus the attacks (RTP timestamps alternating by 2^31, an SSRC flood).
enum WHIPSeeds {
    static let audioSSRC: UInt32 = 1111, videoSSRC: UInt32 = 2222, rtxSSRC: UInt32 = 3333

    static let offer = Offers.h264Opus()

    static func generate() throws -> [(name: String, bytes: [UInt8])] {
        [("h264-opus-2s", try session(offer: offer, seconds: 2, timestampJump: false)),
         ("h264-opus-timestamps-jump-2pow31", try session(offer: offer, seconds: 2, timestampJump: true)),
         ("ssrc-flood", try ssrcFlood()),
         ("chrome-offer", try session(offer: Offers.chrome, seconds: 1, timestampJump: false)),
         ("simulcast-offer", try session(offer: Offers.simulcast, seconds: 1, timestampJump: false, flags: 1))]
    }

    struct Datagrams {
        var writer = FuzzInputWriter()
        var time: Int64 = 0

        mutating func add(at microseconds: Int64, rtcp: Bool = false, _ bytes: [UInt8]) {
            let step = max(0, min(255, (microseconds - time) / 1000))
            time += step * 1000
            writer.byte(UInt8(step))
            writer.byte(rtcp ? 1 : 0)
            writer.lengthPrefixed(bytes)
        }
    }

    static func session(offer: String, seconds: Int, timestampJump: Bool, flags: UInt8 = 0) throws -> [UInt8] {
        // The streams as the offer negotiates them: its payload types, and its SSRCs when it declares them.
        var options = WHIPMediaTarget.answerOptions
        options.acceptSimulcast = flags & 1 != 0
        let negotiation = try SDPNegotiator.negotiate(offer: offer, options: options)
        let audioPayloadType = negotiation.audio?.codec.payloadType ?? 111
        let videoPayloadType = negotiation.video?.codec.payloadType ?? 102
        let rtxPayloadType = negotiation.video?.rtx?.payloadType ?? 103
        let audioSSRC = negotiation.audio?.sources.first?.ssrc ?? Self.audioSSRC
        let videoSSRC = negotiation.video?.sources.first?.ssrc ?? Self.videoSSRC
        let rtxSSRC = negotiation.video?.sources.first?.rtxSSRC ?? Self.rtxSSRC
        var datagrams = Datagrams()
        datagrams.writer.byte(flags)
        datagrams.writer.lengthPrefixed(Array(offer.utf8))
        var videoSequence: UInt16 = 100, audioSequence: UInt16 = 7
        var lostPacket: RTPPacket?
        let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1F, 0xD9, 0x00, 0x78, 0x02, 0x27, 0xE5, 0x84, 0x00]
        let pps: [UInt8] = [0x68, 0xCB, 0x83, 0xCB, 0x20]
        for tick in 0..<(seconds * 50) {
            let now = Int64(tick) * 20_000
            var audioTimestamp = UInt32(truncatingIfNeeded: tick * 960)
            if timestampJump, tick % 2 == 1 { audioTimestamp &+= 0x8000_0000 }
            let opus = RTPPacket(marker: tick == 0, payloadType: audioPayloadType, sequenceNumber: audioSequence, timestamp: audioTimestamp,
                                 ssrc: audioSSRC, payload: [0xFC] + (0..<60).map { UInt8(truncatingIfNeeded: $0 &* tick) })
            audioSequence &+= 1
            datagrams.add(at: now, try opus.serialized())
            guard tick % 3 == 0 else { continue }
            let frame = tick / 3
            var videoTimestamp = UInt32(truncatingIfNeeded: frame * 3000)
            if timestampJump, frame % 2 == 1 { videoTimestamp &+= 0x8000_0000 }
            var payloads: [[UInt8]]
            if frame % 30 == 0 {
                let stap: [UInt8] = [0x18] + [0, UInt8(sps.count)] + sps + [0, UInt8(pps.count)] + pps
                let idr = (0..<2400).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ frame) }
                payloads = [stap]
                for (index, start) in stride(from: 0, to: idr.count, by: 1000).enumerated() {
                    let end = min(idr.count, start + 1000)
                    let header: UInt8 = (start == 0 ? 0x80 : 0) | (end == idr.count ? 0x40 : 0) | 5
                    payloads.append([0x7C, header] + idr[start..<end])
                    _ = index
                }
            } else {
                payloads = [[0x41] + (0..<400).map { UInt8(truncatingIfNeeded: $0 &+ frame) }]
            }
            for (index, payload) in payloads.enumerated() {
                let packet = RTPPacket(marker: index == payloads.count - 1, payloadType: videoPayloadType, sequenceNumber: videoSequence,
                                       timestamp: videoTimestamp, ssrc: videoSSRC, payload: payload)
                videoSequence &+= 1
                if frame == 4, lostPacket == nil {
                    lostPacket = packet
                    continue
                }
                datagrams.add(at: now, try packet.serialized())
            }
            if frame == 6, let lost = lostPacket {
                let rtx = RTPPacket(payloadType: rtxPayloadType, sequenceNumber: 1, timestamp: lost.timestamp, ssrc: rtxSSRC,
                                    payload: [UInt8(lost.sequenceNumber >> 8), UInt8(truncatingIfNeeded: lost.sequenceNumber)] + lost.payload)
                datagrams.add(at: now, try rtx.serialized())
            }
            if frame % 30 == 15 {
                let ntp = UInt64(3_900_000_000 + tick / 50) << 32 | UInt64(tick % 50) * (UInt64(1) << 32) / 50
                let reports: [RTCPPacket] = [
                    .senderReport(RTCPSenderReport(ssrc: audioSSRC, ntpTime: ntp, rtpTimestamp: audioTimestamp, packetCount: UInt32(tick),
                                                   octetCount: UInt32(tick * 61))),
                    .senderReport(RTCPSenderReport(ssrc: videoSSRC, ntpTime: ntp, rtpTimestamp: videoTimestamp, packetCount: UInt32(frame),
                                                   octetCount: UInt32(frame * 401))),
                ]
                for report in reports { datagrams.add(at: now, rtcp: true, try report.serialized()) }
            }
        }
        return datagrams.writer.bytes
    }

    /// 1,500 SSRCs on the video payload type, one packet each, no time passing.
    static func ssrcFlood() throws -> [UInt8] {
        var datagrams = Datagrams()
        datagrams.writer.byte(0)
        datagrams.writer.lengthPrefixed(Array(offer.utf8))
        for index in 0..<1500 {
            let packet = RTPPacket(payloadType: 102, sequenceNumber: UInt16(index), timestamp: UInt32(index), ssrc: 0x1000_0000 + UInt32(index),
                                   payload: [0x41, 1, 2, 3])
            datagrams.add(at: 0, try packet.serialized())
        }
        return datagrams.writer.bytes
    }
}

/// Every offer fixture, and STUN checks as browsers send them (valid, wrong credentials,
/// from a new address, a bare fingerprint-less request).
enum SignallingSeeds {
    static func generate() throws -> [(name: String, bytes: [UInt8])] {
        let offers: [(String, String)] = [("chrome", Offers.chrome), ("firefox", Offers.firefox), ("obs", Offers.obs),
                                          ("gstreamer", Offers.gstreamer), ("aiortc", Offers.aiortc), ("simulcast", Offers.simulcast)]
        var seeds = offers.map { (name: "sdp-\($0.0)", bytes: [UInt8(0)] + Array($0.1.utf8)) }
        // WHEP viewers (the WHIP negotiator refuses their recvonly offers): a Main composition,
        // and a Constrained Baseline one; a Main one to aiortc, which declares only Baseline profiles.
        seeds += [(name: "sdp-whep-chromium-main", bytes: [UInt8(1 << 1)] + Array(Offers.chromiumWHEP.utf8)),
                  (name: "sdp-whep-aiortc", bytes: [UInt8(0)] + Array(Offers.aiortcWHEP.utf8)),
                  (name: "sdp-whep-aiortc-main-any-offered", bytes: [UInt8(1 << 1 | 1 << 3)] + Array(Offers.aiortcWHEP.utf8))]
        var writer = FuzzInputWriter()
        writer.byte(1)
        let local = WHIPMediaTarget.answerOptions.localCredentials
        let key = STUNIntegrityKey(key: Array(local.pwd.utf8), hmacSHA1: SignallingTarget.fastHMAC)
        for index in 0..<6 {
            var generator = SeededGenerator(seed: UInt64(index + 1))
            let username = index == 3 ? "wrong:\(SignallingTarget.remote.ufrag)" : "\(local.ufrag):\(SignallingTarget.remote.ufrag)"
            var attributes: [STUNAttribute] = [.username(username), .priority(1_845_501_695), .iceControlling(0x1122_3344_5566_7788)]
            if index >= 1 { attributes.append(.useCandidate) }
            let request = STUNMessage(type: .bindingRequest, transactionID: .random(using: &generator), attributes: attributes)
            writer.byte(index == 0 ? 0 : 50)
            writer.byte(index == 4 ? 1 : 0)
            writer.lengthPrefixed(request.encode(integrity: index == 5 ? nil : key, fingerprint: index != 5))
        }
        writer.byte(200)
        writer.byte(0)
        writer.lengthPrefixed([0x90, 0x60, 0, 1, 0, 0, 0, 1, 0, 0, 0x08, 0xAE])
        seeds.append((name: "stun-checks", bytes: writer.bytes))
        return seeds
    }
}

/// A valid body for every operation (what the AWS CLI sends), and a few invalid ones.
enum APISeeds {
    static let stage = "arn:aws:ivs:us-east-1:123456789012:stage/AbCdEfGhIjKl"

    static func generate() throws -> [(name: String, bytes: [UInt8])] {
        let shapes = APIOperation.jsonBodyRequests
        func seed(_ operation: String, participants: UInt8, _ body: String) -> (name: String, bytes: [UInt8]) {
            let index = shapes.firstIndex { $0.operation.rawValue == operation } ?? shapes.count
            return (name: "valid-\(operation)-\(participants)", bytes: [UInt8(index), participants] + Array(body.utf8))
        }
        return [
            seed("StartComposition", participants: 5, """
            {"stageArn":"\(stage)","destinations":[{"s3":{"storageConfigurationArn":"arn:aws:ivs:us-east-1:123456789012:storage-configuration/AbCdEfGhIjKl","encoderConfigurationArns":["arn:aws:ivs:us-east-1:123456789012:encoder-configuration/AbCdEfGhIjKl"],"recordingConfiguration":{"hlsConfiguration":{"targetSegmentDurationSeconds":2},"format":"HLS"},"thumbnailConfigurations":[{"targetIntervalSeconds":5,"storage":["SEQUENTIAL","LATEST"]}]}}],"layout":{"grid":{"featuredParticipantAttribute":"featured","omitStoppedVideo":true,"videoAspectRatio":"VIDEO","videoFillMode":"COVER","gridGap":8}}}
            """),
            seed("StartComposition", participants: 3, """
            {"stageArn":"\(stage)","destinations":[{"channel":{"channelArn":"arn:aws:ivs:us-east-1:123456789012:channel/AbCdEfGhIjKl"}}],"layout":{"pip":{"featuredParticipantAttribute":"f","pipBehavior":"DYNAMIC","pipOffset":16,"pipPosition":"TOP_LEFT","pipWidth":320,"pipHeight":180,"gridGap":4}}}
            """),
            seed("CreateEncoderConfiguration", participants: 12, """
            {"name":"enc","video":{"width":1920,"height":1080,"framerate":60,"bitrate":6000000},"tags":{"a":"b"}}
            """),
            seed("CreateEncoderConfiguration", participants: 9, """
            {"video":{"width":2,"height":1920,"framerate":1,"bitrate":1}}
            """),
            seed("CreateStage", participants: 0, """
            {"name":"s","participantTokenConfigurations":[{"userId":"u","capabilities":["PUBLISH","SUBSCRIBE"],"duration":720,"attributes":{"k":"v"}}],"autoParticipantRecordingConfiguration":{"storageConfigurationArn":"arn:aws:ivs:us-east-1:123456789012:storage-configuration/AbCdEfGhIjKl","mediaTypes":["AUDIO_VIDEO"]}}
            """),
            seed("ListStages", participants: 7, #"{"maxResults":2,"nextToken":"djE6a2V5Mw=="}"#),
            // Later pages of the other List operations: a composition ARN, a key within the
            // list, a key of bytes no ARN has, and a token of another version.
            seed("ListCompositions", participants: 5, #"{"filterByStageArn":"\#(stage)","maxResults":1,"nextToken":"djE6YXJuOmF3czppdnM6dXMtZWFzdC0xOjEyMzQ1Njc4OTAxMjpjb21wb3NpdGlvbi9BYkNkRWZHaElqS2w="}"#),
            seed("ListIngestConfigurations", participants: 9, #"{"filterByState":"ACTIVE","maxResults":3,"nextToken":"djE6a2V5MQ=="}"#),
            seed("ListPublicKeys", participants: 2, #"{"maxResults":1,"nextToken":"djE6AO+/vw=="}"#),
            seed("ListEncoderConfigurations", participants: 4, #"{"maxResults":100,"nextToken":"djI6a2V5MQ=="}"#),
            seed("ListParticipants", participants: 3,
                 #"{"stageArn":"\#(stage)","sessionId":"st-AbCdEfGhIjKlM","filterByPublished":true,"maxResults":100}"#),
            seed("CreateParticipantToken", participants: 0,
                 #"{"stageArn":"\#(stage)","duration":20160,"userId":"me","attributes":{"a":"b"},"capabilities":["PUBLISH"]}"#),
            seed("CreateIngestConfiguration", participants: 0,
                 #"{"name":"obs","stageArn":"\#(stage)","userId":"u","ingestProtocol":"RTMPS","insecureIngest":false}"#),
            seed("ImportPublicKey", participants: 0, #"{"publicKeyMaterial":"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----","name":"k"}"#),
            seed("StartParticipantReplication", participants: 0,
                 #"{"sourceStageArn":"\#(stage)","destinationStageArn":"arn:aws:ivs:us-east-1:123456789012:stage/ZyXwVuTsRqPo","participantId":"AbCdEf123456","reconnectWindowSeconds":30,"attributes":{"a":"b"}}"#),
            seed("ListParticipantReplicas", participants: 4, #"{"sourceStageArn":"\#(stage)","participantId":"AbCdEf123456","maxResults":2}"#),
            seed("RevokeConnectionToken", participants: 0, #"{"tokenId":"AbCdEf_123-x"}"#),
            seed("UpdateStage", participants: 0, #"{"arn":"\#(stage)","name":"x","autoParticipantRecordingConfiguration":{"storageConfigurationArn":""}}"#),
            // The extensions: a running composition directed, a participant's attributes changed.
            seed("UpdateComposition", participants: 7,
                 #"{"arn":"arn:aws:ivs:us-east-1:123456789012:composition/AbCdEfGhIjKl","layout":{"pip":{"pipPosition":"TOP_RIGHT","pipWidth":320,"pipHeight":180},"transitionMs":300},"transitionMs":2000,"audio":{"AbCdEf123456":{"gain":0.5},"ZyXwVu":{"muted":true}}}"#),
            // Overlays, at start and alone in an update (files in their folder, every colour form).
            seed("StartComposition", participants: 4, """
            {"stageArn":"\(stage)","destinations":[{"channel":{"channelArn":"arn:aws:ivs:us-east-1:123456789012:channel/AbCdEfGhIjKl"}}],"overlays":{"labels":{"attribute":"name","position":"TOP_LEFT","margin":8,"fontScale":0.05,"textColor":"#FFFFFF","backgroundColor":"#000000A0"},"images":[{"file":"logos/logo.png","position":"TOP_RIGHT","margin":24,"opacity":0.8},{"file":"bug.png","x":10,"y":20,"width":64,"height":64,"layer":"BELOW"}],"background":{"color":"#102030","file":"bg.jpg","fillMode":"COVER"},"slate":{"text":"We'll be right back\\nسنعود","fontSize":64}}}
            """),
            seed("UpdateComposition", participants: 2,
                 ##"{"arn":"arn:aws:ivs:us-east-1:123456789012:composition/AbCdEfGhIjKl","overlays":{"banners":[{"id":"lower-third","text":"Dana — 東京","position":"BOTTOM_CENTER","fontSize":36,"textColor":"#fff0e0","visible":true,"transitionMs":300},{"id":"ticker","text":"x","visible":false}]}}"##),
            seed("UpdateParticipant", participants: 0,
                 #"{"stageArn":"\#(stage)","participantId":"AbCdEf123456","attributes":{"featured":"true","order":"2"}}"#),
            (name: "valid-TagResource-0", bytes: [UInt8(shapes.count), 0] + Array(#"{"tags":{"a":"b","c":"d"}}"#.utf8)),
            (name: "valid-UntagResource-0", bytes: [UInt8(shapes.count + 1), 0] + Array("tagKeys=a&tagKeys=b%20c".utf8)),
            (name: "valid-ListTagsForResource-0", bytes: [UInt8(shapes.count + 2), 0] + Array(stage.utf8)),
            (name: "invalid-UntagResource-0", bytes: [UInt8(shapes.count + 1), 0] + Array("tagKeys=a&tagKeys=%zz".utf8)),
            (name: "invalid-UpdateComposition-0",
             bytes: seed("UpdateComposition", participants: 0,
                         #"{"arn":"arn:aws:ivs:us-east-1:123456789012:composition/AbCdEfGhIjKl","overlays":{"images":[{"file":"logos/../../etc/passwd"}]}}"#).bytes),
            (name: "invalid-CreateEncoderConfiguration-4",
             bytes: seed("CreateEncoderConfiguration", participants: 4, #"{"video":{"width":1e300,"height":-9223372036854775808}}"#).bytes),
        ]
    }
}
