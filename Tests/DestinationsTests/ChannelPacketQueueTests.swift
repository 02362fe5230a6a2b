@testable import Destinations
import FFmpeg
import Testing
import MediaCore

@Suite struct ChannelPacketQueueTests {
    func packet(pts: Int64, keyframe: Bool = false) -> Packet {
        let packet = Packet()
        packet.pts = pts
        packet.dts = pts
        packet.isKeyframe = keyframe
        return packet
    }

    func drain(_ queue: ChannelPacketQueue) -> [(Int64, MediaType)] {
        var items: [(Int64, MediaType)] = []
        while case .item(let item) = queue.next(waitingUpTo: 0) {
            items.append((item.packet.pts, item.media))
            queue.recycle(item.packet)
        }
        return items
    }

    @Test func overflowDropsEverythingThenWaitsForAVideoKeyframe() {
        let queue = ChannelPacketQueue(capacity: 4)
        for pts in 0..<4 { #expect(queue.push(packet(pts: Int64(pts)), media: .video) == 0) }
        // Full: the four queued packets go, and so does everything up to the next keyframe.
        #expect(queue.push(packet(pts: 4), media: .video) == 4)
        #expect(queue.push(packet(pts: 100), media: .audio) == 0)
        #expect(queue.push(packet(pts: 5), media: .video) == 0)
        #expect(queue.droppedPackets == 7)
        #expect(queue.push(packet(pts: 6, keyframe: true), media: .video) == 0)
        #expect(queue.push(packet(pts: 101), media: .audio) == 0)
        #expect(drain(queue).map(\.0) == [6, 101])
        #expect(queue.droppedPackets == 7)
    }

    @Test func overflowOnAKeyframeKeepsIt() {
        let queue = ChannelPacketQueue(capacity: 2)
        _ = queue.push(packet(pts: 0, keyframe: true), media: .video)
        _ = queue.push(packet(pts: 1), media: .video)
        #expect(queue.push(packet(pts: 2, keyframe: true), media: .video) == 2)
        #expect(drain(queue).map(\.0) == [2])
        #expect(queue.droppedPackets == 2)
    }

    @Test func newConnectionStartsAtTheNewestKeyframeKeepingLaterAudio() {
        let queue = ChannelPacketQueue(capacity: 16)
        // Video and audio share a time base here (pts = ms); the video lags the audio.
        _ = queue.push(packet(pts: 0, keyframe: true), media: .video)
        _ = queue.push(packet(pts: 10), media: .audio)
        _ = queue.push(packet(pts: 40), media: .audio)     // later than the keyframe at 33: kept
        _ = queue.push(packet(pts: 33, keyframe: true), media: .video)
        _ = queue.push(packet(pts: 20), media: .audio)     // after the keyframe in queue order: kept
        _ = queue.push(packet(pts: 66), media: .video)
        let resume = queue.skipToNewestKeyframe { $0.packet.pts }
        #expect(resume?.resumeAt == 33)
        #expect(resume?.skipped == 2)
        #expect(drain(queue).map(\.0) == [40, 33, 20, 66])
    }

    @Test func noKeyframeQueuedSkipsNothing() {
        let queue = ChannelPacketQueue(capacity: 4)
        _ = queue.push(packet(pts: 1), media: .video)
        #expect(queue.skipToNewestKeyframe { $0.packet.pts } == nil)
        #expect(drain(queue).count == 1)
    }

    @Test func closedQueueDrainsThenReportsDrained() {
        let queue = ChannelPacketQueue(capacity: 4)
        _ = queue.push(packet(pts: 1, keyframe: true), media: .video)
        queue.close()
        #expect(queue.push(packet(pts: 2), media: .video) == 0)
        if case .item(let item) = queue.next(waitingUpTo: 0) { #expect(item.packet.pts == 1) } else { Issue.record("expected an item") }
        if case .drained = queue.next(waitingUpTo: 0) {} else { Issue.record("expected drained") }
    }
}
