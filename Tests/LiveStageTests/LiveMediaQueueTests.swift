// The bounded hand-off from a publisher to one composition: what an overflow drops, what it
// keeps, and when it tells the publisher's connection to ask for a keyframe.
@testable import LiveStage
import MediaCore
import Foundation
import Testing
import FFmpeg

@Suite struct LiveMediaQueueTests {
    func video(_ keyframe: Bool, bytes: Int = 10) -> LiveMediaPacket {
        LiveMediaPacket(type: .video, content: .data(Array(repeating: 0, count: bytes)), pts: 0, dts: 0, isKeyframe: keyframe)
    }

    func audio() -> LiveMediaPacket {
        LiveMediaPacket(type: .audio, content: .data([1, 2, 3]), pts: 0, dts: 0, isKeyframe: true)
    }

    func drain(_ queue: LiveMediaQueue) -> [LiveMediaPacket] {
        var packets: [LiveMediaPacket] = []
        while case .packet(let packet) = queue.pop() { packets.append(packet) }
        return packets
    }

    @Test("an overflow on a delta frame drops the queue, reports it, and video waits for the next keyframe")
    func overflowOnDeltaFrame() {
        let queue = LiveMediaQueue(limits: LiveQueueLimits(packets: 4, bytes: 1 << 20))
        #expect(!queue.push(video(true)))
        for _ in 0..<3 { #expect(!queue.push(video(false))) }
        #expect(queue.push(video(false)), "the fifth packet overflows a queue of four")
        #expect(drain(queue).isEmpty)
        #expect(!queue.push(video(false)), "still waiting: dropped, no new request")
        #expect(!queue.push(video(true)))
        #expect(drain(queue).map(\.isKeyframe) == [true])
        #expect(queue.counters.dropped == 6 && queue.counters.overflows == 1)
    }

    @Test("an overflow on audio keeps the audio and makes the next delta frame wait for a keyframe")
    func overflowOnAudio() {
        let queue = LiveMediaQueue(limits: LiveQueueLimits(packets: 3, bytes: 1 << 20))
        #expect(!queue.push(video(true)))
        #expect(!queue.push(video(false)))
        #expect(!queue.push(audio()))
        #expect(queue.push(audio()), "queued video was lost")
        #expect(!queue.push(video(false)))
        #expect(drain(queue).map(\.type) == [.audio])
        #expect(!queue.push(video(true)))
        #expect(drain(queue).map(\.isKeyframe) == [true])
    }

    @Test("a publisher whose composition queue overflowed has a keyframe request, taken once")
    func publisherKeyframeRequest() {
        let hub = LiveStageHub(clock: ManualMediaClock(), settings: LiveMediaSettings(queue: LiveQueueLimits(packets: 3, bytes: 1 << 20)))
        let subscription = hub.subscribe(stageArn: "stage")
        let publisher = hub.join(stageArn: "stage", identity: LiveParticipantIdentity(participantId: "p", userId: "u", attributes: [:]))
        publisher.announce(CodecConfiguration(codec: .h264)) // the setup takes one place of three
        #expect(!publisher.takeKeyframeRequest())
        publisher.push(.video, data: [0x65], timestamp: 0, isKeyframe: true)
        publisher.push(.video, data: [0x41], timestamp: 33_000, isKeyframe: false)
        #expect(!publisher.takeKeyframeRequest())
        publisher.push(.video, data: [0x41], timestamp: 66_000, isKeyframe: false)
        #expect(publisher.takeKeyframeRequest())
        #expect(!publisher.takeKeyframeRequest())
        subscription.cancel()
    }
}

@Suite struct LivePublisherBoundsTests {
    @Test("packets with timestamps out of any sane range are dropped and counted, never mapped")
    func insaneTimestamps() {
        let hub = LiveStageHub(clock: ManualMediaClock(start: .seconds(100)))
        let subscription = hub.subscribe(stageArn: "stage")
        let publisher = hub.join(stageArn: "stage", identity: LiveParticipantIdentity(participantId: "p", userId: "u", attributes: [:]))
        publisher.announce(CodecConfiguration(codec: .aac))
        for timestamp in [Int64.max, .min, LiveMediaSettings.timestampLimit, -LiveMediaSettings.timestampLimit] {
            publisher.push(.audio, data: [1], timestamp: timestamp, isKeyframe: true)
        }
        publisher.push(.video, data: [1], timestamp: 0, compositionOffset: .max, isKeyframe: true)
        publisher.push(.audio, data: [1], timestamp: 0, isKeyframe: true)
        #expect(publisher.droppedForTimestamps == 4)
        #expect(publisher.received.packets == 1)
        subscription.cancel()
    }

    @Test("the keyframe cache is bounded in packets: a flood of empty frames does not grow it")
    func keyframeCachePackets() {
        let hub = LiveStageHub(clock: ManualMediaClock(), settings: LiveMediaSettings(keyframeCachePackets: 100))
        let publisher = hub.join(stageArn: "stage", identity: LiveParticipantIdentity(participantId: "p", userId: "u", attributes: [:]))
        publisher.announce(CodecConfiguration(codec: .h264))
        publisher.push(.video, data: [0x65], timestamp: 0, isKeyframe: true)
        for index in 1...10_000 { publisher.push(.video, data: [], timestamp: Int64(index), isKeyframe: false) }
        #expect(publisher.keyframeCacheCount <= 100)
    }
}

@Suite struct LiveMediaQueueWaitTests {
    static let audio = LiveMediaPacket(type: .audio, content: .data([1, 2, 3]), pts: 0, dts: 0, isKeyframe: true)

    @Test("a consumer that has emptied the queue sleeps until the next push or the end, not for its timeout",
          .timeLimit(.minutes(1)), arguments: [false, true])
    func waitIsWokenByThePublisher(ends: Bool) async {
        let queue = LiveMediaQueue()
        let woken = await withCheckedContinuation { (continuation: CheckedContinuation<ContinuousClock.Duration, Never>) in
            Thread {
                let started = ContinuousClock.now
                // Far longer than the test's time limit: only the push (or the end) can end it in time.
                queue.waitForPacket(timeout: .seconds(600))
                continuation.resume(returning: ContinuousClock.now - started)
            }.start()
            Thread {
                Thread.sleep(forTimeInterval: 0.05)
                if ends { queue.finish() } else { queue.push(Self.audio) }
            }.start()
        }
        #expect(woken < .seconds(600))
        if ends {
            guard case .ended = queue.pop() else { Issue.record("ended"); return }
        } else {
            guard case .packet = queue.pop() else { Issue.record("the pushed packet"); return }
        }
    }

    @Test("with a packet queued, or the publisher gone, the wait returns at once; with nothing, after its timeout")
    func waitReturns() {
        let queue = LiveMediaQueue()
        queue.push(Self.audio)
        queue.waitForPacket(timeout: .seconds(600)) // would hang the test if it waited
        while case .packet = queue.pop() {}
        queue.waitForPacket(timeout: .milliseconds(10))
        queue.finish()
        queue.waitForPacket(timeout: .seconds(600))
        guard case .ended = queue.pop() else { Issue.record("ended"); return }
    }
}


struct LiveVideoDemandTests {
    @Test("demands combine to what covers them all: the largest if anyone wants it, else each dimension's most; nobody asks for nothing")
    func combined() {
        let small = LiveVideoDemand.atLeast(width: 480, height: 270), tall = LiveVideoDemand.atLeast(width: 300, height: 400)
        #expect(LiveVideoDemand.combined([LiveVideoDemand]()) == LiveVideoDemand.none)
        #expect(LiveVideoDemand.combined([LiveVideoDemand.none, .none]) == LiveVideoDemand.none)
        #expect(LiveVideoDemand.combined([small, .none]) == small)
        #expect(LiveVideoDemand.combined([small, tall]) == .atLeast(width: 480, height: 400))
        #expect(LiveVideoDemand.combined([small, .largest, tall]) == .largest)
        #expect(LiveVideoDemand.combined([.none, .largest]) == .largest)
        // Every order gives the same answer.
        let all: [LiveVideoDemand] = [small, tall, .none, .largest]
        for a in all { for b in all { #expect(LiveVideoDemand.combined([a, b]) == LiveVideoDemand.combined([b, a])) } }
    }

    @Test("a new queue asks for the largest until its consumer says otherwise")
    func defaultIsLargest() {
        let queue = LiveMediaQueue()
        #expect(queue.videoDemand == .largest)
        queue.videoDemand = .atLeast(width: 2, height: 2)
        #expect(queue.videoDemand == .atLeast(width: 2, height: 2))
    }
}
