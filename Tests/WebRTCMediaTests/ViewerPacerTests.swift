// A viewer's bounded send queue: keyframe start, audio first, pacing, and a viewer that
// falls behind or goes silent dropped to the next keyframe instead of queued without bound.
@testable import WebRTCMedia
import MediaCore
import TestSupport
import Testing

struct ViewerPacerTests {
    typealias F = SendFixtures

    static func audio(_ timestamp: Int64) -> PacketizedFrame { F.frame([[0xA0]], codec: .opus, timestamp: timestamp) }

    /// (timestamp, index) of what `poll` releases at `now` until it gives nothing.
    static func drain(_ pacer: inout ViewerPacer, now: Int64) -> [String] {
        var released: [String] = []
        while let packet = pacer.poll(now: now) {
            released.append("\(packet.frame.mediaType == .audio ? "a" : "v")\(packet.frame.timestamp).\(packet.index)")
        }
        return released
    }

    @Test("a new viewer gets no video before a keyframe, audio at once; then frames go whole and in order, audio first")
    func startsAtKeyframe() {
        var pacer = ViewerPacer()
        #expect(pacer.isWaitingForKeyframe)
        #expect(pacer.enqueue(F.frame(packets: 2, timestamp: 1), now: 0) == .skippedUntilKeyframe)
        #expect(pacer.enqueue(Self.audio(10), now: 0) == .queued)
        #expect(pacer.enqueue(F.frame(packets: 3, timestamp: 2, keyframe: true), now: 0) == .queued)
        #expect(!pacer.isWaitingForKeyframe)
        #expect(pacer.enqueue(F.frame(packets: 1, timestamp: 3), now: 0) == .queued)
        #expect(pacer.enqueue(Self.audio(11), now: 0) == .queued)
        #expect(pacer.queuedVideoPackets == 4 && pacer.queuedAudioFrames == 2)
        #expect(Self.drain(&pacer, now: 0) == ["a10.0", "a11.0", "v2.0", "v2.1", "v2.2", "v3.0"])
        #expect(pacer.isEmpty && pacer.queuedVideoPackets == 0)
        #expect(pacer.framesSkippedUntilKeyframe == 1)
        #expect(pacer.framesQueued == 4)
        #expect(pacer.packetsReleased == 6)
        #expect(pacer.nextDeadline(now: 0) == nil)
        var open = ViewerPacer(configuration: .init(startsAtKeyframe: false))
        #expect(open.enqueue(F.frame(packets: 1, timestamp: 1), now: 0) == .queued)
    }

    @Test("audio overtakes video, even in the middle of a frame")
    func audioFirst() {
        var pacer = ViewerPacer()
        _ = pacer.enqueue(F.frame(packets: 3, timestamp: 1, keyframe: true), now: 0)
        #expect(pacer.poll(now: 0)?.index == 0)
        _ = pacer.enqueue(Self.audio(5), now: 0)
        #expect(Self.drain(&pacer, now: 0) == ["a5.0", "v1.1", "v1.2"])
    }

    @Test("over the packet bound: the waiting video is dropped, the frame partly sent is finished, no delta frame until the next keyframe")
    func backlogBound() {
        var pacer = ViewerPacer(configuration: .init(maxQueuedVideoPackets: 10))
        _ = pacer.enqueue(F.frame(packets: 4, timestamp: 1, keyframe: true), now: 0)
        #expect(pacer.poll(now: 0)?.index == 0)
        #expect(pacer.enqueue(F.frame(packets: 3, timestamp: 2), now: 0) == .queued)
        #expect(pacer.enqueue(F.frame(packets: 3, timestamp: 3), now: 0) == .queued)
        #expect(pacer.queuedVideoPackets == 9)
        #expect(pacer.peakQueuedVideoPackets == 9)
        #expect(pacer.enqueue(F.frame(packets: 3, timestamp: 4), now: 0) == .droppedBacklog(frames: 3, waitingForKeyframe: true))
        #expect(pacer.isWaitingForKeyframe)
        #expect(pacer.queuedVideoPackets == 3)
        #expect(pacer.enqueue(F.frame(packets: 1, timestamp: 5), now: 0) == .skippedUntilKeyframe)
        #expect(Self.drain(&pacer, now: 0) == ["v1.1", "v1.2", "v1.3"])
        #expect(pacer.enqueue(F.frame(packets: 2, timestamp: 6, keyframe: true), now: 0) == .queued)
        #expect(Self.drain(&pacer, now: 0) == ["v6.0", "v6.1"])
        #expect((pacer.dropsToKeyframe, pacer.videoFramesDropped, pacer.videoPacketsDropped) == (1, 3, 9))
        #expect(pacer.framesSkippedUntilKeyframe == 1)
    }

    @Test("a frame that waited past maxQueueDelay drops the viewer to the next keyframe; a keyframe offered then is skipped to directly")
    func queueDelay() {
        var pacer = ViewerPacer(configuration: .init(maxQueueDelay: 500_000))
        _ = pacer.enqueue(F.frame(packets: 2, timestamp: 1, keyframe: true), now: 0)
        #expect(pacer.enqueue(F.frame(packets: 2, timestamp: 2), now: 300_000) == .queued)
        #expect(pacer.enqueue(F.frame(packets: 2, timestamp: 3), now: 500_000) == .queued)
        #expect(pacer.enqueue(F.frame(packets: 2, timestamp: 4), now: 500_001) == .droppedBacklog(frames: 4, waitingForKeyframe: true))
        #expect(pacer.isEmpty)
        #expect(pacer.enqueue(F.frame(packets: 1, timestamp: 5, keyframe: true), now: 600_000) == .queued)
        _ = pacer.enqueue(F.frame(packets: 1, timestamp: 6), now: 700_000)
        #expect(pacer.enqueue(F.frame(packets: 3, timestamp: 7, keyframe: true), now: 1_200_000)
                == .droppedBacklog(frames: 2, waitingForKeyframe: false))
        #expect(!pacer.isWaitingForKeyframe)
        #expect(Self.drain(&pacer, now: 1_200_000) == ["v7.0", "v7.1", "v7.2"])
        #expect(pacer.dropsToKeyframe == 1)
        #expect(pacer.videoFramesDropped == 6)
    }

    @Test("a keyframe larger than the bound is still sent whole")
    func largeKeyframe() {
        var pacer = ViewerPacer(configuration: .init(maxQueuedVideoPackets: 4))
        #expect(pacer.enqueue(F.frame(packets: 9, timestamp: 1, keyframe: true), now: 0) == .queued)
        #expect(pacer.poll(now: 0)?.index == 0)
        #expect(pacer.enqueue(F.frame(packets: 1, timestamp: 2), now: 0) == .droppedBacklog(frames: 1, waitingForKeyframe: true))
        #expect(Self.drain(&pacer, now: 0) == (1..<9).map { "v1.\($0)" })
        #expect(pacer.enqueue(F.frame(packets: 9, timestamp: 3, keyframe: true), now: 0) == .queued)
        #expect(Self.drain(&pacer, now: 0).count == 9)
    }

    @Test("audio over its bound or older than maxQueueDelay is dropped, oldest first")
    func audioBound() {
        var pacer = ViewerPacer(configuration: .init(maxQueueDelay: 100_000, maxQueuedAudioFrames: 3))
        for timestamp in 0..<5 { _ = pacer.enqueue(Self.audio(Int64(timestamp)), now: Int64(timestamp) * 20_000) }
        #expect(pacer.audioFramesDropped == 2)
        #expect(pacer.queuedAudioFrames == 3)
        // At 200 ms the three waiting (from 40, 60 and 80 ms) are all over 100 ms old.
        _ = pacer.enqueue(Self.audio(5), now: 200_000)
        #expect(Self.drain(&pacer, now: 200_000) == ["a5.0"])
        #expect(pacer.audioFramesDropped == 5)
    }

    @Test("pacing: a burst, then one packet per interval; nextDeadline says when the next may go")
    func pacing() {
        var pacer = ViewerPacer(configuration: .init(pacing: TokenBucket.Rate(burst: 2, interval: 1000)))
        _ = pacer.enqueue(F.frame(packets: 5, timestamp: 1, keyframe: true), now: 0)
        #expect(pacer.nextDeadline(now: 0) == 0)
        #expect(Self.drain(&pacer, now: 0) == ["v1.0", "v1.1"])
        #expect(pacer.nextDeadline(now: 0) == 1000)
        #expect(pacer.nextDeadline(now: 400) == 1000)
        #expect(Self.drain(&pacer, now: 999).isEmpty)
        #expect(Self.drain(&pacer, now: 1000) == ["v1.2"])
        #expect(Self.drain(&pacer, now: 3500) == ["v1.3", "v1.4"])
        #expect(pacer.nextDeadline(now: 3500) == nil)
    }

    @Test("a viewer silent past feedbackTimeout gets nothing: its queue stays bounded by drops to keyframes; speaking again resumes it at a keyframe")
    func silentViewer() {
        var pacer = ViewerPacer(configuration: .init(maxQueuedVideoPackets: 200, maxQueueDelay: 500_000, feedbackTimeout: 3_000_000))
        var sent: [String] = []
        var now: Int64 = 0
        var admissions: [PacerAdmission] = []
        // 30 fps, a keyframe every 2 s; RTCP every second for the first 2 s, then nothing.
        for frame in 0..<250 {
            now = Int64(frame) * 33_333
            if frame % 30 == 0, frame <= 60 { pacer.feedbackReceived(now: now) }
            admissions.append(pacer.enqueue(F.frame(packets: 4, timestamp: Int64(frame), keyframe: frame % 60 == 0), now: now))
            sent += Self.drain(&pacer, now: now)
            #expect(pacer.queuedVideoPackets <= 200)
        }
        // Heard last at 2 s: held from 5 s on.
        #expect(sent.count == 4 * 151)
        #expect(pacer.isHeldForSilence(now: now))
        #expect(pacer.silence(now: now) == now - 60 * 33_333)
        #expect(pacer.nextDeadline(now: now) == nil)
        #expect(pacer.pollsHeldForSilence > 0)
        // Queued from frame 151; 16 frames later the oldest is over 500 ms old: dropped with the
        // frame offered, then again 16 frames after the keyframe of frame 180.
        #expect(pacer.dropsToKeyframe == 2)
        #expect(admissions[167] == .droppedBacklog(frames: 17, waitingForKeyframe: true))
        #expect(admissions[196] == .droppedBacklog(frames: 17, waitingForKeyframe: true))
        // It speaks again: what waits starts at a keyframe.
        pacer.feedbackReceived(now: now)
        let resumed = Self.drain(&pacer, now: now)
        #expect(resumed.first == "v240.0")
        #expect(resumed.count == 40)
    }

    /// One step of a generated run.
    enum Step: CustomStringConvertible {
        case video(keyframe: Bool, packets: Int)
        case audio
        case poll(Int)
        case wait(Int64)
        case feedback

        var description: String {
            switch self {
            case .video(let keyframe, let packets): "\(keyframe ? "keyframe" : "delta") of \(packets)"
            case .audio: "audio"
            case .poll(let count): "poll ×\(count)"
            case .wait(let time): "wait \(time / 1000) ms"
            case .feedback: "RTCP"
            }
        }
    }

    @Test("generated runs against a model: frames leave whole and in order, video only from a keyframe after a start or a drop, the queue bounded, every frame accounted for (seed printed on failure)")
    func generated() {
        let failure = PropertyCheck.check(seeds: PropertyCheck.seeds(count: 300, base: 44_600_000), generate: { random in
            (0..<Int.random(in: 1...400, using: &random)).map { _ -> Step in
                switch Int.random(in: 0..<20, using: &random) {
                case 0..<2: .video(keyframe: true, packets: Int.random(in: 1...40, using: &random))
                case 2..<8: .video(keyframe: false, packets: Int.random(in: 1...12, using: &random))
                case 8..<11: .audio
                case 11..<16: .poll(Int.random(in: 0...30, using: &random))
                case 16..<19: .wait(Int64.random(in: 0...150_000, using: &random))
                default: .feedback
                }
            }
        }, property: { steps in
            let paced = steps.count % 2 == 0
            let bound = 60
            var pacer = ViewerPacer(configuration: .init(maxQueuedVideoPackets: bound, maxQueueDelay: 200_000, maxQueuedAudioFrames: 5,
                                                         pacing: paced ? TokenBucket.Rate(burst: 4, interval: 2_000) : nil,
                                                         feedbackTimeout: 500_000))
            var now: Int64 = 0
            var nextTimestamp: Int64 = 0
            var offered: [Int64: (keyframe: Bool, packets: Int)] = [:]
            var heard: Int64?
            func offeredAt(_ time: Int64) { if heard == nil { heard = time } }
            var current: (timestamp: Int64, next: Int)?
            var mustBeKeyframe = true
            var fullyReleased = 0
            var lastAudio: Int64 = -1

            func take(_ packet: PacedPacket) -> String? {
                let timestamp = packet.frame.timestamp
                if packet.frame.mediaType == .audio {
                    if timestamp <= lastAudio { return "audio \(timestamp) after \(lastAudio)" }
                    lastAudio = timestamp
                    return nil
                }
                if let frame = current {
                    guard timestamp == frame.timestamp, packet.index == frame.next else {
                        return "v\(timestamp).\(packet.index) while v\(frame.timestamp).\(frame.next) was due"
                    }
                } else {
                    guard packet.index == 0 else { return "v\(timestamp) starts at packet \(packet.index)" }
                    if mustBeKeyframe, !packet.frame.isKeyframe { return "delta frame \(timestamp) where a keyframe was due" }
                    mustBeKeyframe = false
                }
                current = (timestamp, packet.index + 1)
                if packet.index + 1 == offered[timestamp]?.packets {
                    current = nil
                    fullyReleased += 1
                }
                return nil
            }

            for step in steps {
                switch step {
                case .video(let keyframe, let packets):
                    let timestamp = nextTimestamp
                    nextTimestamp += 1
                    offered[timestamp] = (keyframe, packets)
                    offeredAt(now)
                    let admission = pacer.enqueue(F.frame(packets: packets, timestamp: timestamp, keyframe: keyframe), now: now)
                    if case .droppedBacklog(_, true) = admission { mustBeKeyframe = true }
                    if admission == .skippedUntilKeyframe, !pacer.isWaitingForKeyframe { return "skipped while not waiting" }
                case .audio:
                    offeredAt(now)
                    _ = pacer.enqueue(Self.audio(nextTimestamp), now: now)
                    nextTimestamp += 1
                case .poll(let count):
                    for _ in 0..<count {
                        guard let packet = pacer.poll(now: now) else { break }
                        if let silentSince = heard, now - silentSince > 500_000 {
                            return "released to a viewer silent since \(silentSince)"
                        }
                        if let problem = take(packet) { return problem }
                    }
                case .wait(let time):
                    now += time
                case .feedback:
                    pacer.feedbackReceived(now: now)
                    heard = max(heard ?? now, now)
                }
                if pacer.queuedVideoPackets > max(bound, 2 * 40) { return "\(pacer.queuedVideoPackets) video packets queued" }
                if pacer.queuedVideoPackets < 0 { return "negative queue" }
            }
            // The viewer speaks and the queue drains: every frame offered was sent whole, skipped or dropped.
            pacer.feedbackReceived(now: now)
            while !pacer.isEmpty {
                if let packet = pacer.poll(now: now) {
                    if let problem = take(packet) { return problem }
                } else if let next = pacer.nextDeadline(now: now), next > now {
                    now = next
                } else {
                    return "nothing released with \(pacer.queuedVideoPackets) packets queued"
                }
            }
            if current != nil { return "a frame left unfinished" }
            let accounted = fullyReleased + Int(pacer.framesSkippedUntilKeyframe + pacer.videoFramesDropped)
            if accounted != offered.count { return "\(offered.count) frames offered, \(accounted) accounted for" }
            return nil
        })
        if let failure { Issue.record("\(failure)") }
    }
}
