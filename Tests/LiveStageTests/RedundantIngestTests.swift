// Redundant ingest's switch: which feed is shown (RedundantFeedSelector, over generated
// sequences of joins, leaves, pictures and gaps), and what the participant's consumers get at
// a switch (RedundantIngest on a hub with a manual clock): the new feed from its last keyframe
// with timestamps that only move forward, its sound after the last sound sent, nothing twice.
@testable import LiveStage
import MediaCore
import Synchronization
import Testing
import TestSupport

@Suite struct RedundantFeedSelectorTests {
    typealias Selector = RedundantFeedSelector
    static let stall: Int64 = 200_000, back: Int64 = 5_000_000

    @Test("the first feed is shown; its leaving or stalling shows the other at once; the primary returns after 5 s steady, at a keyframe")
    func rule() {
        var s = Selector(stallAfter: Self.stall, returnAfter: Self.back)
        #expect(s.joined(0, at: 0) == .init(from: nil, to: 0, reason: .joined))
        #expect(s.joined(1, at: 10_000) == nil)
        var t: Int64 = 0
        for _ in 0..<30 {
            t += 33_000
            #expect(s.video(0, keyframe: false, at: t, canStart: true) == nil)
            #expect(s.video(1, keyframe: false, at: t + 5_000, canStart: true) == nil, "the backup waits while the primary sends")
        }
        // The primary stalls: the backup's next picture past the allowance takes over.
        #expect(s.video(1, keyframe: false, at: t + 200_000, canStart: true) == nil, "not yet: 200 ms is the allowance itself")
        #expect(s.video(1, keyframe: false, at: t + 233_000, canStart: false) == nil, "nothing to start from yet")
        #expect(s.video(1, keyframe: false, at: t + 234_000, canStart: true) == .init(from: 0, to: 1, reason: .stalled))
        t += 234_000
        // The primary comes back: shown again only after 5 s without a gap, at a keyframe.
        var returned: (Int64, Selector.Switch)?
        for frame in 1...200 {
            let now = t + Int64(frame) * 33_000
            _ = s.video(1, keyframe: false, at: now + 1_000, canStart: true)
            if let change = s.video(0, keyframe: frame % 30 == 0, at: now, canStart: true) {
                returned = (now - t, change)
                break
            }
        }
        #expect(returned?.1 == .init(from: 1, to: 0, reason: .primaryBack))
        #expect((returned?.0 ?? 0) >= Self.back && (returned?.0 ?? .max) <= Self.back + 1_000_000, "\(String(describing: returned))")
        #expect(s.left(0, at: 99_000_000) == .init(from: 0, to: 1, reason: .left))
        #expect(s.left(1, at: 99_000_001) == .init(from: 1, to: nil, reason: .left))
        #expect(s.active == nil)
    }

    @Test("a primary that flaps (a gap over the allowance every 2 s) is never shown again")
    func flappingPrimary() {
        var s = Selector(stallAfter: Self.stall, returnAfter: Self.back)
        _ = s.joined(1, at: 0)
        _ = s.joined(0, at: 0)
        var t: Int64 = 0
        for frame in 1...900 {
            t += 33_000
            _ = s.video(1, keyframe: false, at: t, canStart: true)
            // The primary misses 10 frames (333 ms) every 2 s.
            guard frame % 60 >= 10 else { continue }
            #expect(s.video(0, keyframe: frame % 30 == 0, at: t + 500, canStart: true) == nil, "frame \(frame)")
        }
        #expect(s.active == 1)
    }

    /// Generated sequences (seeded): whatever happens, the shown feed is a connected one (nil
    /// only when neither is), every change is reported, and a feed sending video within the
    /// allowance is never replaced except by the primary coming back.
    @Test("generated sequences keep the invariants", arguments: 0..<40)
    func generated(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var s = Selector(stallAfter: Self.stall, returnAfter: Self.back)
        var connected = [false, false], lastVideo: [Int64?] = [nil, nil]
        var shown: Int?
        var t: Int64 = 0
        for step in 0..<600 {
            t += Int64(random.next() % 60_000)
            let feed = Int(random.next() % 2)
            let roll = random.next() % 100
            let before = s.active
            var change: Selector.Switch?
            if roll < 3 {
                change = connected[feed] ? s.left(feed, at: t) : s.joined(feed, at: t)
                connected[feed].toggle()
                lastVideo[feed] = nil
            } else if connected[feed] {
                change = s.video(feed, keyframe: roll < 10, at: t, canStart: roll % 7 != 0)
                if let change, change.reason == .stalled, let previous = before {
                    #expect(lastVideo[previous].map { t - $0 > Self.stall } ?? true, "seed \(seed) step \(step): replaced while sending")
                }
                lastVideo[feed] = t
            }
            if let change {
                #expect(change.from == before, "seed \(seed) step \(step)")
                shown = change.to
            }
            #expect(s.active == shown, "seed \(seed) step \(step): a change went unreported")
            if let active = s.active {
                #expect(connected[active], "seed \(seed) step \(step): shows a feed that is gone")
            } else {
                #expect(!connected[0] && !connected[1], "seed \(seed) step \(step): shows nobody while a feed is connected")
            }
        }
    }
}

/// The switches a RedundantIngest reported.
final class Switches: Sendable {
    let list = Mutex<[RedundantFeedSelector.Switch]>([])
}

@Suite struct RedundantIngestSwitchTests {
    static let video = CodecConfiguration(codec: .h264, extradata: [1, 2, 3], width: 320, height: 240)
    static let audio = CodecConfiguration(codec: .aac, extradata: [0x11, 0x90], sampleRate: 48_000, channelCount: 2)

    struct Harness {
        let clock = ManualMediaClock(start: .seconds(10))
        let hub: LiveStageHub
        let ingest: RedundantIngest
        let queue: LiveMediaQueue
        let subscription: LiveStageSubscription
        let seen = Switches()

        init() {
            hub = LiveStageHub(clock: clock, settings: LiveMediaSettings(latency: 200_000))
            subscription = hub.subscribe(stageArn: "stage")
            let participant = hub.join(stageArn: "stage", identity: LiveParticipantIdentity(participantId: "p", userId: "", attributes: [:]))
            let seen = self.seen
            ingest = RedundantIngest(participant: participant, clock: clock, settings: hub.settings) { change in
                seen.list.withLock { $0.append(change) }
            }
            queue = subscription.snapshot().entries[0].queue
        }

        func feed(_ index: Int) -> LivePublisher {
            let publisher = hub.join(stageArn: "feed-\(index)", identity: LiveParticipantIdentity(participantId: "p", userId: "", attributes: [:]))
            ingest.attach(index, publisher: publisher)
            publisher.announce(RedundantIngestSwitchTests.video)
            publisher.announce(RedundantIngestSwitchTests.audio)
            return publisher
        }

        func drain() -> [LiveMediaPacket] {
            var packets: [LiveMediaPacket] = []
            while case .packet(let packet) = queue.pop() { packets.append(packet) }
            return packets
        }
    }

    /// 30 fps pictures (a keyframe every 30) and 20 ms sounds, each feed marking its payload.
    static func send(_ publisher: LivePublisher, mark: UInt8, frames: Range<Int>, clock: ManualMediaClock, offset: Int64 = 0) {
        for frame in frames {
            let time = Int64(frame) * 33_333 + offset
            publisher.push(.video, data: [mark, UInt8(truncatingIfNeeded: frame)], timestamp: time, isKeyframe: frame % 30 == 0)
            publisher.push(.audio, data: [mark], timestamp: time, isKeyframe: true)
            clock.advance(by: .microseconds(33_333))
        }
    }

    @Test("the backup takes over when the primary disconnects: its pictures since the keyframe, in order, then its sound after the last sent")
    func disconnectShowsTheBackupFromItsKeyframe() {
        let h = Harness()
        let primary = h.feed(0), backup = h.feed(1)
        // Both publish the same frames (the backup's clock a little behind).
        for frame in 0..<45 {
            Self.send(primary, mark: 0xA0, frames: frame..<(frame + 1), clock: h.clock)
            Self.send(backup, mark: 0xB0, frames: frame..<(frame + 1), clock: ManualMediaClock())
        }
        let before = h.drain()
        #expect(before.filter { $0.type == .video && !$0.isConfiguration }.count == 45)
        #expect(before.allSatisfy { packet in
            guard case .data(let bytes) = packet.content else { return true }
            return bytes[0] == 0xA0
        }, "only the primary is shown")
        let lastPicture = before.last { $0.type == .video }!.dts, lastSound = before.last { $0.type == .audio }!.pts

        primary.leave()
        #expect(h.ingest.detach(0, publisher: primary) == false)
        #expect(h.seen.list.withLock { $0.last } == .init(from: 0, to: 1, reason: .left))
        let after = h.drain()
        let pictures = after.filter { $0.type == .video && !$0.isConfiguration }
        #expect(pictures.count == 15, "the backup's frames 30...44: from its last keyframe")
        #expect(pictures.first?.isKeyframe == true)
        #expect(!after.contains { $0.isConfiguration }, "the same setups: not announced again, the decoders go on")
        let dts = pictures.map(\.dts)
        #expect(zip(dts, dts.dropFirst()).allSatisfy { $0 < $1 } && dts[0] > lastPicture, "forward only: \(dts) after \(lastPicture)")
        #expect(dts[0] - lastPicture == RedundantIngest.catchUpStep)
        let sounds = after.filter { $0.type == .audio }
        #expect(sounds.allSatisfy { $0.pts > lastSound }, "no sound twice")
        // The feed's connection picks its rendition for the participant's consumers (a
        // multitrack or simulcast encoder), not for its own publisher, which has none.
        h.queue.videoDemand = .atLeast(width: 160, height: 90)
        #expect(backup.videoDemand == .atLeast(width: 160, height: 90))
        // It goes on: new backup packets reach the participant.
        Self.send(backup, mark: 0xB0, frames: 45..<48, clock: h.clock)
        #expect(h.drain().filter { $0.type == .video }.count == 3)
        backup.leave()
        #expect(h.ingest.detach(1, publisher: backup) == true, "the last feed: the participant leaves")
        h.subscription.cancel()
    }

    @Test("a primary back for 5 s is shown again at its keyframe; a stalled primary is replaced; a setup that differs is announced")
    func stallAndReturn() {
        let h = Harness()
        let primary = h.feed(0), backup = h.feed(1)
        Self.send(primary, mark: 0xA0, frames: 0..<30, clock: h.clock)
        // The primary stalls: only the backup sends; after the allowance it is shown.
        Self.send(backup, mark: 0xB0, frames: 0..<31, clock: h.clock)
        #expect(h.ingest.active == 1)
        #expect(h.seen.list.withLock { $0.last?.reason } == .stalled)
        _ = h.drain()
        // The backup changes its picture size: announced to the participant's consumers.
        backup.announce(CodecConfiguration(codec: .h264, extradata: [9], width: 640, height: 480))
        #expect(h.drain().contains { $0.isConfiguration })
        // The primary resumes; both send; 5 s later at the primary's keyframe it is back.
        for frame in 31..<(31 + 180) {
            Self.send(primary, mark: 0xA0, frames: frame..<(frame + 1), clock: ManualMediaClock())
            Self.send(backup, mark: 0xB0, frames: frame..<(frame + 1), clock: h.clock)
        }
        #expect(h.ingest.active == 0)
        #expect(h.seen.list.withLock { $0.last?.reason } == .primaryBack)
        let packets = h.drain()
        let marks = packets.compactMap { packet -> UInt8? in
            guard packet.type == .video, case .data(let bytes) = packet.content else { return nil }
            return bytes[0]
        }
        #expect(marks.first == 0xB0 && marks.last == 0xA0)
        #expect(marks.drop { $0 == 0xB0 }.allSatisfy { $0 == 0xA0 }, "one switch back, no flapping")
        let dts = packets.filter { $0.type == .video && !$0.isConfiguration }.map(\.dts)
        #expect(zip(dts, dts.dropFirst()).allSatisfy { $0 < $1 })
        h.subscription.cancel()
    }
}
