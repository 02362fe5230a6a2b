// PublisherMediaReceiver against a simulated browser: real H.264 and Opus (made by the
// ffmpeg CLI) packetized as a sender does (FU-A, RTX, sender reports with one NTP clock),
// over a seeded network with loss and different delays for audio and video. The receiver
// must recover every packet with NACKs, ask for a keyframe when it cannot, and put audio
// and video of the same instant at the same publisher time once the sender reports arrived.
import Foundation
import Testing
import TestSupport
import WebRTCMedia
@testable import WebRTCPublisher
import WebRTCSignal

/// H.264 access units (Annex B) and Opus packets, 20 ms apart, from ffmpeg.
struct SenderMedia: Sendable {
    var videoFrames: [[UInt8]]
    var opusPackets: [[UInt8]]

    static func make(seconds: Int, size: String = "320x240") throws -> SenderMedia {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rtp-sender-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let h264 = directory.appendingPathComponent("video.h264").path
        let opus = directory.appendingPathComponent("audio.opus").path
        try run(["-f", "lavfi", "-i", "testsrc2=size=\(size):rate=30", "-t", "\(seconds)", "-c:v", "libx264", "-preset", "ultrafast",
                 "-bf", "0", "-g", "30", "-x264-params", "slice-max-size=3000", "-f", "h264", h264])
        try run(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "\(seconds)", "-c:a", "libopus",
                 "-frame_duration", "20", "-f", "ogg", opus])
        return SenderMedia(videoFrames: splitAccessUnits(try Array(Data(contentsOf: URL(fileURLWithPath: h264)))),
                           opusPackets: oggPackets(try Array(Data(contentsOf: URL(fileURLWithPath: opus)))))
    }

    static func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        process.arguments = ["-hide_banner", "-loglevel", "error", "-y"] + arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
    }

    /// Annex B → NAL units → access units (a new one at each AUD or first slice after a VCL NAL).
    static func splitAccessUnits(_ stream: [UInt8]) -> [[UInt8]] {
        var nals: [[UInt8]] = []
        var start: Int?
        var index = 0
        while index + 3 < stream.count {
            if stream[index] == 0, stream[index + 1] == 0, stream[index + 2] == 1 {
                if let start { nals.append(trimZeros(Array(stream[start..<index]))) }
                start = index + 3
                index += 3
            } else {
                index += 1
            }
        }
        if let start { nals.append(Array(stream[start...])) }
        var units: [[UInt8]] = []
        var current: [UInt8] = []
        var hasSlice = false
        for nal in nals where !nal.isEmpty {
            let type = nal[0] & 0x1F
            let firstSliceOfFrame = (type == 1 || type == 5) && nal.count > 1 && nal[1] & 0x80 != 0
            if hasSlice && (type == 9 || type == 7 || firstSliceOfFrame) {
                units.append(current)
                current = []
                hasSlice = false
            }
            current += [0, 0, 0, 1] + nal
            if type == 1 || type == 5 { hasSlice = true }
        }
        if !current.isEmpty { units.append(current) }
        return units
    }

    static func trimZeros(_ nal: [UInt8]) -> [UInt8] {
        var end = nal.count
        while end > 0, nal[end - 1] == 0 { end -= 1 }
        return Array(nal[..<end])
    }

    /// Ogg pages → packets (segments joined); the two header packets are skipped.
    static func oggPackets(_ data: [UInt8]) -> [[UInt8]] {
        var packets: [[UInt8]] = []
        var current: [UInt8] = []
        var offset = 0
        while offset + 27 <= data.count, data[offset..<offset + 4] == [0x4F, 0x67, 0x67, 0x53] {
            let segments = Int(data[offset + 26])
            var body = offset + 27 + segments
            for segment in 0..<segments {
                let length = Int(data[offset + 27 + segment])
                current += data[body..<body + length]
                body += length
                if length < 255 {
                    packets.append(current)
                    current = []
                }
            }
            offset = body
        }
        return Array(packets.dropFirst(2))
    }

    /// One RTP payload per NAL unit that fits, FU-A fragments for the rest.
    static func packetize(_ accessUnit: [UInt8], mtu: Int = 1100) -> [[UInt8]] {
        var payloads: [[UInt8]] = []
        for nal in splitAccessUnits(accessUnit).flatMap({ unit in nalUnits(unit) }) {
            if nal.count <= mtu {
                payloads.append(nal)
                continue
            }
            let header = nal[0]
            var offset = 1
            while offset < nal.count {
                let end = min(nal.count, offset + mtu)
                let start: UInt8 = offset == 1 ? 0x80 : 0
                let last: UInt8 = end == nal.count ? 0x40 : 0
                payloads.append([(header & 0xE0) | 28, start | last | (header & 0x1F)] + nal[offset..<end])
                offset = end
            }
        }
        return payloads
    }

    static func nalUnits(_ annexB: [UInt8]) -> [[UInt8]] {
        var nals: [[UInt8]] = []
        var start: Int?
        var index = 0
        while index + 3 <= annexB.count {
            if index + 4 <= annexB.count, annexB[index..<index + 4] == [0, 0, 0, 1] {
                if let start { nals.append(Array(annexB[start..<index])) }
                start = index + 4
                index += 4
            } else {
                index += 1
            }
        }
        if let start { nals.append(Array(annexB[start...])) }
        return nals.filter { !$0.isEmpty }
    }
}

/// A WHIP offer that negotiates H.264 (PT 102, RTX 103) and Opus (PT 111) with known SSRCs.
let offer = Offers.h264Opus()

/// `offer` with abs-capture-time (id 9) on the audio section.
let offerWithCaptureTimes = offer.replacingOccurrences(
    of: "a=rtpmap:111 opus/48000/2\r\n", with: "a=rtpmap:111 opus/48000/2\r\na=extmap:9 http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time\r\n")

@Suite(.serialized)
struct PublisherMediaReceiverTests {
    static let audioSSRC: UInt32 = 1111, videoSSRC: UInt32 = 2222, rtxSSRC: UInt32 = 3333

    func negotiation(offer: String = offer) throws -> SDPNegotiation {
        try SDPNegotiator.negotiate(offer: offer, options: SDPAnswerOptions(
            localCredentials: IceCredentials(ufrag: "loca", pwd: "localpasswordlocalpasswo"),
            localFingerprintSHA256: String(repeating: "AB:", count: 31) + "AB",
            candidate: TransportAddress(ip: .ipv4(127, 0, 0, 1), port: 40_000), sessionID: 1))
    }

    /// What arrived at the receiver, per kind, with the sender's capture time of each.
    struct Run {
        var units: [ReceivedAccessUnit] = []
        var nacksAnswered = 0
        var originalsLost = 0
    }

    /// How the simulated sender stamps its audio's timing.
    struct AudioTiming {
        /// Audio SRs pair an RTP timestamp with this much after its capture (libwebrtc pairs it
        /// with the moment the frame was encoded: a frame and more later).
        var senderReportLag: Int64 = 0
        /// Every `n`-th audio packet from packet `captureTimesFrom` on carries abs-capture-time (id 9).
        var captureTimeEvery: Int?
        var captureTimesFrom = 0
    }

    /// Sends `seconds` of media: video captured every 33.3 ms, audio every 20 ms, on one sender
    /// clock (NTP = sender µs); RTP timestamps start at random offsets. Video takes 40 ms to
    /// arrive, audio 10 ms; `lossPercent` of the video packets is lost once (RTX answers NACKs).
    func simulate(media: SenderMedia, seconds: Int, lossPercent: Int, seed: UInt64,
                  audioTiming: AudioTiming = AudioTiming()) throws -> (Run, PublisherMediaReceiver) {
        let negotiated = try negotiation(offer: audioTiming.captureTimeEvery == nil ? offer : offerWithCaptureTimes)
        var receiver = PublisherMediaReceiver(negotiation: negotiated,
                                              configuration: PublisherMediaReceiverConfiguration(senderSSRC: 4444))
        var random = SeededGenerator(seed: seed)
        let videoBase = UInt32.random(in: 0...UInt32.max, using: &random)
        let audioBase = UInt32.random(in: 0...UInt32.max, using: &random)
        let senderEpoch: Int64 = 1_700_000_000_000_000  // the sender's NTP clock, µs since 1970
        var events: [(at: Int64, kind: Int, bytes: [UInt8])] = []  // kind 0 RTP, 1 RTCP
        var history: [UInt16: RTPPacket] = [:]
        var videoSequence: UInt16 = 65_000, audioSequence: UInt16 = 100, rtxSequence: UInt16 = 7
        var run = Run()
        let frameCount = min(media.videoFrames.count, seconds * 30)
        for index in 0..<frameCount {
            let capture = Int64(index) * 1_000_000 / 30
            let timestamp = videoBase &+ UInt32(truncatingIfNeeded: capture * 90_000 / 1_000_000)
            let payloads = SenderMedia.packetize(media.videoFrames[index])
            for (number, payload) in payloads.enumerated() {
                let packet = RTPPacket(marker: number == payloads.count - 1, payloadType: 102, sequenceNumber: videoSequence,
                                       timestamp: timestamp, ssrc: Self.videoSSRC, payload: payload)
                history[videoSequence] = packet
                videoSequence &+= 1
                if Int.random(in: 0..<100, using: &random) < lossPercent {
                    run.originalsLost += 1
                    continue
                }
                events.append((capture + 40_000 + Int64(number) * 100, 0, try packet.serialized()))
            }
        }
        let audioCount = min(media.opusPackets.count, seconds * 50)
        for index in 0..<audioCount {
            let capture = Int64(index) * 20_000
            let stamped = audioTiming.captureTimeEvery.map { index >= audioTiming.captureTimesFrom && (index - audioTiming.captureTimesFrom) % $0 == 0 } ?? false
            let element = RTPHeaderExtensionElement(
                id: 9, data: AbsoluteCaptureTime(captureTimestamp: NTPTime.ntp(fromUnixMicroseconds: senderEpoch + capture)).serialized)
            let packet = RTPPacket(payloadType: 111, sequenceNumber: audioSequence,
                                   timestamp: audioBase &+ UInt32(truncatingIfNeeded: capture * 48_000 / 1_000_000),
                                   ssrc: Self.audioSSRC, headerExtension: stamped ? .oneByte([element]) : nil,
                                   payload: media.opusPackets[index])
            audioSequence &+= 1
            events.append((capture + 10_000, 0, try packet.serialized()))
        }
        // Sender reports every second from 0.5 s: the same NTP instant for both streams.
        for second in 0..<seconds {
            let at = Int64(second) * 1_000_000 + 500_000
            for (ssrc, base, rate, lag) in [(Self.videoSSRC, videoBase, Int64(90_000), Int64(0)),
                                            (Self.audioSSRC, audioBase, 48_000, audioTiming.senderReportLag)] {
                let ntp = NTPTime.ntp(fromUnixMicroseconds: senderEpoch + at + lag)
                let report = RTCPPacket.senderReport(RTCPSenderReport(ssrc: ssrc, ntpTime: ntp,
                                                                      rtpTimestamp: base &+ UInt32(truncatingIfNeeded: at * rate / 1_000_000),
                                                                      packetCount: 0, octetCount: 0))
                events.append((at + 5_000, 1, try RTCPPacket.serializeCompound([report])))
            }
        }
        events.sort { $0.at < $1.at }
        var now: Int64 = 0
        var cursor = 0
        let end = Int64(seconds) * 1_000_000 + 1_000_000
        while now < end {
            let next = cursor < events.count ? events[cursor].at : end
            let wake = min(next, receiver.nextDeadline.map { max($0, now) } ?? end, end)
            now = wake
            while cursor < events.count, events[cursor].at <= now {
                let event = events[cursor]
                cursor += 1
                if event.kind == 0 {
                    run.units += receiver.receiveRTP(event.bytes, now: now).compactMap(\.accessUnit)
                } else {
                    receiver.receiveRTCP(event.bytes, now: now)
                }
            }
            for output in receiver.poll(now: now) {
                switch output {
                case .accessUnit(let unit): run.units.append(unit)
                case .rtcp(let compound):
                    // The sender answers NACKs with RTX 30 ms later.
                    for case .genericNack(let nack) in try RTCPPacket.parseCompound(compound) {
                        for sequence in NackPacker.unpack(nack.pairs) {
                            guard let original = history[sequence] else { continue }
                            let wrapped = RTXUnwrapper.wrap(original, rtxSSRC: Self.rtxSSRC, rtxPayloadType: 103, rtxSequenceNumber: rtxSequence)
                            rtxSequence &+= 1
                            run.nacksAnswered += 1
                            let at = now + 30_000
                            let index = events[cursor...].firstIndex { $0.at > at } ?? events.count
                            events.insert((at, 0, try wrapped.serialized()), at: index)
                        }
                    }
                }
            }
            if now == end { break }
        }
        return (run, receiver)
    }

    @Test("every video packet lost once is recovered by NACK and every frame is delivered whole")
    func lossRecovery() async throws {
        let media = try await onThread { try SenderMedia.make(seconds: 4) }
        let (run, receiver) = try simulate(media: media, seconds: 4, lossPercent: 5, seed: 11)
        let video = run.units.filter { $0.kind == .video }
        #expect(run.originalsLost > 10)
        #expect(receiver.statistics.recoveredByNack == Int64(run.originalsLost))
        // Every retransmission arrives (none is lost here): it repaired a gap, or it was not needed.
        #expect(receiver.statistics.recoveredByNack + receiver.statistics.unneededRetransmissions == Int64(run.nacksAnswered),
                "recovered \(receiver.statistics.recoveredByNack), unneeded \(receiver.statistics.unneededRetransmissions), sent \(run.nacksAnswered)")
        #expect(video.count == min(media.videoFrames.count, 120))
        #expect(video.allSatisfy { $0.codec == .h264 })
        #expect(video.first?.isKeyframe == true)
        #expect(receiver.statistics.framesIncomplete == 0)
        // Frames carry exactly what was sent.
        for (index, unit) in video.enumerated() {
            #expect(SenderMedia.nalUnits(unit.data).filter { $0[0] & 0x1F != 9 } == SenderMedia.nalUnits(media.videoFrames[index]).filter { $0[0] & 0x1F != 9 },
                    "frame \(index)")
        }
    }

    @Test("after the sender reports, audio and video of the same instant share a publisher time")
    func lipSync() async throws {
        let media = try await onThread { try SenderMedia.make(seconds: 4) }
        let (run, _) = try simulate(media: media, seconds: 4, lossPercent: 0, seed: 3)
        let video = run.units.filter { $0.kind == .video }, audio = run.units.filter { $0.kind == .audio }
        #expect(audio.count > 180)
        // Video frame n was captured at n/30 s, audio packet m at m/50 s: at 2 s and 3 s both
        // exist (frames 60 and 90, packets 100 and 150); their times must differ by < 1 ms.
        for (frame, packet) in [(60, 100), (90, 150)] {
            let difference = video[frame].time - audio[packet].time
            #expect(abs(difference) < 1_000, "video \(frame) vs audio \(packet): \(difference) µs")
        }
        // Before any sender report, arrival anchors each stream: video (40 ms late) and audio
        // (10 ms) are then 30 ms apart; the reports fixed that without a jump in audio.
        let audioSteps = zip(audio, audio.dropFirst()).map { $1.time - $0.time }
        #expect(audioSteps.allSatisfy { abs($0 - 20_000) <= 1_000 }, "audio steps \(Set(audioSteps))")
    }

    @Test("audio SRs stamped a frame late put audio that late; abs-capture-time puts it back, audio never jumping")
    func captureTimesCorrectLateAudioReports() async throws {
        let media = try await onThread { try SenderMedia.make(seconds: 4) }
        func offsets(_ timing: AudioTiming) throws -> (lipSync: [Int64], audioSteps: Set<Int64>, receiver: PublisherMediaReceiver) {
            let (run, receiver) = try simulate(media: media, seconds: 4, lossPercent: 0, seed: 3, audioTiming: timing)
            let video = run.units.filter { $0.kind == .video }, audio = run.units.filter { $0.kind == .audio }
            // Audio minus video publisher time of one capture instant (2 s, 3 s): what a viewer sees as audio lag.
            let lipSync = [(60, 100), (90, 150)].map { audio[$0.1].time - video[$0.0].time }
            return (lipSync, Set(zip(audio, audio.dropFirst()).map { $1.time - $0.time }), receiver)
        }
        // libwebrtc's audio SRs, 25 ms late: through them alone, audio lands 25 ms late.
        let late = try offsets(AudioTiming(senderReportLag: 25_000))
        #expect(late.lipSync.allSatisfy { abs($0 - 25_000) < 1_000 }, "\(late.lipSync)")
        #expect(late.receiver.statistics.audioCaptureTimes == 0)
        // The same SRs with capture times on the first audio packet and once a second after.
        let exact = try offsets(AudioTiming(senderReportLag: 25_000, captureTimeEvery: 50))
        #expect(exact.lipSync.allSatisfy { abs($0) < 1_000 }, "\(exact.lipSync)")
        #expect(exact.receiver.statistics.audioCaptureTimes == 4)
        #expect(exact.audioSteps.allSatisfy { abs($0 - 20_000) <= 1_000 }, "audio steps \(exact.audioSteps)")
        // Capture times from 1.5 s on only: the SR mapping (from 0.5 s) comes first and gives
        // way; audio stays where it was (no gap, no overlap) and video moves instead.
        let switched = try offsets(AudioTiming(senderReportLag: 25_000, captureTimeEvery: 50, captureTimesFrom: 75))
        #expect(switched.lipSync.allSatisfy { abs($0) < 1_000 }, "\(switched.lipSync)")
        #expect(switched.audioSteps.allSatisfy { abs($0 - 20_000) <= 1_000 }, "audio steps \(switched.audioSteps)")
    }

    @Test("after a frame lost for good, delta frames wait for the next keyframe, which a PLI asks for")
    func unrecoverableLoss() throws {
        var receiver = PublisherMediaReceiver(negotiation: try negotiation(), configuration: PublisherMediaReceiverConfiguration(senderSSRC: 1))
        var delivered: [ReceivedAccessUnit] = []
        var feedback: [RTCPPacket] = []
        func frame(_ sequence: UInt16, idr: Bool, at now: Int64) throws {
            let nal: [UInt8] = (idr ? [0x65] : [0x41]) + Array(repeating: UInt8(sequence), count: 50)
            let packet = try RTPPacket(marker: true, payloadType: 102, sequenceNumber: sequence, timestamp: UInt32(sequence) * 3000,
                                       ssrc: Self.videoSSRC, payload: nal).serialized()
            delivered += receiver.receiveRTP(packet, now: now).compactMap(\.accessUnit)
        }
        func poll(until end: Int64) throws {
            var now: Int64 = 0
            while now <= end {
                for output in receiver.poll(now: now) {
                    switch output {
                    case .accessUnit(let unit): delivered.append(unit)
                    case .rtcp(let compound): feedback += try RTCPPacket.parseCompound(compound)
                    }
                }
                now += 5_000
            }
        }
        try frame(1, idr: true, at: 0)
        try frame(2, idr: false, at: 33_000)
        // Frame 3 (sequence 3) never arrives, not even after NACKs.
        try frame(4, idr: false, at: 100_000)
        try poll(until: 3_000_000)
        try frame(5, idr: false, at: 3_000_000)
        try frame(6, idr: true, at: 3_033_000)
        try frame(7, idr: false, at: 3_066_000)
        try poll(until: 4_000_000)
        let video = delivered.filter { $0.kind == .video }
        #expect(video.map { $0.data[5] } == [1, 2, 6, 7].map { UInt8($0) })
        // Frame 4 follows the gap (the depacketizer calls it broken), frame 5 waits for the keyframe.
        #expect(receiver.statistics.framesIncomplete + receiver.statistics.framesSkippedUntilKeyframe == 2,
                "\(receiver.statistics)")
        #expect(receiver.statistics.framesSkippedUntilKeyframe >= 1)
        #expect(feedback.contains { if case .pictureLossIndication = $0 { return true } else { return false } })
    }

    @Test("a loss the NACKs give up only after the keyframe that followed it holds nothing after that keyframe")
    func lossGivenUpBehindAKeyframe() throws {
        // A publisher sending keyframes only when asked, or at scene cuts (aiortc): a delta frame
        // is lost, the reorder buffer lets it go (the frame after it is broken), a keyframe comes,
        // and only then do the NACKs give the number up. The frames after the keyframe must not
        // wait for another keyframe (before: frozen until the publisher's next one, 1 s or never).
        var receiver = PublisherMediaReceiver(negotiation: try negotiation(), configuration: PublisherMediaReceiverConfiguration(senderSSRC: 1))
        var delivered: [UInt8] = []
        var plis = 0
        var now: Int64 = 0
        func take(_ outputs: [ReceiverOutput]) throws {
            for output in outputs {
                switch output {
                case .accessUnit(let unit): if unit.kind == .video { delivered.append(unit.data[5]) }
                case .rtcp(let compound):
                    plis += try RTCPPacket.parseCompound(compound).filter { if case .pictureLossIndication = $0 { true } else { false } }.count
                }
            }
        }
        func frame(_ sequence: UInt16, idr: Bool) throws {
            let nal: [UInt8] = (idr ? [0x65] : [0x41]) + Array(repeating: UInt8(sequence), count: 50)
            let packet = try RTPPacket(marker: true, payloadType: 102, sequenceNumber: sequence, timestamp: UInt32(sequence) * 3000,
                                       ssrc: Self.videoSSRC, payload: nal).serialized()
            try take(receiver.receiveRTP(packet, now: now))
        }
        func poll(until end: Int64) throws {
            while now < end {
                now += 5_000
                try take(receiver.poll(now: now))
            }
        }
        try frame(1, idr: true)
        try poll(until: 33_000)
        try frame(2, idr: false)
        try poll(until: 100_000)
        // Frame 3 never arrives; frame 4 (a delta frame) is broken by it; frame 5 is a keyframe.
        try frame(4, idr: false)
        try poll(until: 133_000)
        try frame(5, idr: true)
        try poll(until: 166_000)
        let plisBefore = plis
        for sequence in UInt16(6)...40 {
            try frame(sequence, idr: false)
            try poll(until: now + 33_000)
        }
        try poll(until: 3_000_000)
        #expect(delivered == [1, 2] + Array(UInt8(5)...40), "\(receiver.statistics)")
        #expect(receiver.statistics.framesSkippedUntilKeyframe == 0)
        // Frame 3 after all, long after the receiver stopped waiting for it: dropped and counted.
        try frame(3, idr: false)
        #expect(receiver.statistics.videoPacketsTooLate == 1 && receiver.statistics.audioPacketsTooLate == 0)
        // Nothing after the keyframe is broken: no keyframe asked for once it came.
        #expect(plis == plisBefore)
    }

    @Test("once media arrives, the first receiver report, REMB and the joining PLI are due at once; then at their intervals")
    func firstFeedbackIsDue() throws {
        var receiver = PublisherMediaReceiver(negotiation: try negotiation(), configuration: PublisherMediaReceiverConfiguration(senderSSRC: 1))
        #expect(receiver.nextDeadline == nil, "nothing to report before any media")
        let delta = try RTPPacket(marker: true, payloadType: 102, sequenceNumber: 1, timestamp: 3000, ssrc: Self.videoSSRC,
                                  payload: [0x41, 1, 2, 3]).serialized()
        _ = receiver.receiveRTP(delta, now: 50_000)
        #expect(receiver.nextDeadline == 50_000)
        var feedback: [RTCPPacket] = []
        for case .rtcp(let compound) in receiver.poll(now: 50_000) { feedback += try RTCPPacket.parseCompound(compound) }
        #expect(feedback.contains { if case .receiverReport = $0 { true } else { false } })
        #expect(feedback.contains { if case .receiverEstimatedMaxBitrate = $0 { true } else { false } })
        #expect(feedback.contains { if case .pictureLossIndication = $0 { true } else { false } })
        let next = try #require(receiver.nextDeadline)
        #expect(next > 50_000 && next <= 50_000 + 1_500_000, "the next report or a repeated PLI, not now: \(next)")
    }

    @Test("a composition that lost video asks for a keyframe: a PLI at the next poll, not at the next scheduled one")
    func keyframeOnRequest() throws {
        var receiver = PublisherMediaReceiver(negotiation: try negotiation(), configuration: PublisherMediaReceiverConfiguration(senderSSRC: 1))
        func plis(at now: Int64) throws -> Int {
            var count = 0
            for case .rtcp(let compound) in receiver.poll(now: now) {
                count += try RTCPPacket.parseCompound(compound).filter { if case .pictureLossIndication = $0 { true } else { false } }.count
            }
            return count
        }
        let idr = try RTPPacket(marker: true, payloadType: 102, sequenceNumber: 1, timestamp: 3000, ssrc: Self.videoSSRC,
                                payload: [0x65, 1, 2, 3]).serialized()
        _ = receiver.receiveRTP(idr, now: 0)
        _ = try plis(at: 0)
        // A keyframe arrived: no request is pending for seconds.
        #expect(try plis(at: 2_000_000) == 0)
        receiver.requestKeyframe()
        #expect(try plis(at: 2_010_000) == 1)
    }

    @Test("a retransmission of a packet merely reordered, asked for before it came, is counted as unneeded")
    func unneededRetransmission() throws {
        var receiver = PublisherMediaReceiver(negotiation: try negotiation(), configuration: PublisherMediaReceiverConfiguration(senderSSRC: 1))
        func packet(_ sequence: UInt16) -> RTPPacket {
            RTPPacket(marker: true, payloadType: 102, sequenceNumber: sequence, timestamp: UInt32(sequence) * 3000,
                      ssrc: Self.videoSSRC, payload: [0x41, 1, 2, 3])
        }
        _ = receiver.receiveRTP(try packet(1).serialized(), now: 0)
        _ = receiver.receiveRTP(try packet(3).serialized(), now: 1_000)
        let nacks = receiver.poll(now: 20_000).compactMap { output -> [UInt16]? in
            guard case .rtcp(let compound) = output else { return nil }
            return (try? RTCPPacket.parseCompound(compound))?.flatMap { packet -> [UInt16] in
                if case .genericNack(let nack) = packet { NackPacker.unpack(nack.pairs) } else { [] }
            }
        }.flatMap { $0 }
        #expect(nacks == [2])
        _ = receiver.receiveRTP(try packet(2).serialized(), now: 25_000)  // the original, late
        let retransmission = RTXUnwrapper.wrap(packet(2), rtxSSRC: Self.rtxSSRC, rtxPayloadType: 103, rtxSequenceNumber: 1)
        _ = receiver.receiveRTP(try retransmission.serialized(), now: 30_000)
        _ = receiver.poll(now: 30_000)
        #expect(receiver.statistics.unneededRetransmissions == 1)
    }

    @Test("packets of streams the offer did not negotiate are counted and dropped")
    func unknownStreams() throws {
        var receiver = PublisherMediaReceiver(negotiation: try negotiation(), configuration: PublisherMediaReceiverConfiguration(senderSSRC: 1))
        let stranger = try RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 1, ssrc: 9, payload: [1, 2, 3]).serialized()
        #expect(receiver.receiveRTP(stranger, now: 0).isEmpty)
        #expect(receiver.receiveRTP([0x80, 0x60], now: 0).isEmpty)
        #expect(receiver.statistics.unknownPackets == 2)
    }

    @Test("a flood of SSRCs on negotiated payload types makes no streams: only those declared (or, undeclared, one per m-section) are kept",
          arguments: [true, false])
    func ssrcFlood(declared: Bool) throws {
        // Without a=ssrc lines (as simulcast and some clients offer), the first SSRC of a kind is the stream.
        let text = declared ? offer : offer.split(separator: "\r\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("a=ssrc") }.joined(separator: "\r\n")
        var receiver = PublisherMediaReceiver(negotiation: try negotiation(offer: text), configuration: PublisherMediaReceiverConfiguration(senderSSRC: 1))
        func send(ssrc: UInt32, payloadType: UInt8, sequence: UInt16, now: Int64) throws {
            let packet = try RTPPacket(marker: true, payloadType: payloadType, sequenceNumber: sequence, timestamp: UInt32(sequence) * 3000,
                                       ssrc: ssrc, payload: [0x65, 1, 2, 3]).serialized()
            _ = receiver.receiveRTP(packet, now: now)
        }
        try send(ssrc: Self.videoSSRC, payloadType: 102, sequence: 1, now: 0)
        try send(ssrc: Self.audioSSRC, payloadType: 111, sequence: 1, now: 0)
        for index in 0..<20_000 {
            let payloadType: UInt8 = [102, 111, 103][index % 3]
            try send(ssrc: 100_000 + UInt32(index), payloadType: payloadType, sequence: UInt16(index % 60_000), now: Int64(index))
        }
        #expect(receiver.streamCount == 2)
        #expect(receiver.rtxAssociationCount <= 3)
        #expect(receiver.statistics.undeclaredStreamPackets >= 19_990, "\(receiver.statistics)")
        // The real streams go on.
        let before = receiver.statistics.packetsReceived
        try send(ssrc: Self.videoSSRC, payloadType: 102, sequence: 2, now: 30_000)
        #expect(receiver.statistics.packetsReceived == before + 1)
    }
}

extension ReceiverOutput {
    var accessUnit: ReceivedAccessUnit? {
        if case .accessUnit(let unit) = self { return unit }
        return nil
    }
}
