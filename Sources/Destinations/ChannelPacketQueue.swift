// The bounded hand-off between the media thread and a channel destination's sender thread.
// The media thread never waits here: when the network falls behind by `capacity` packets
// everything queued is dropped and packets are discarded until the next video keyframe, so
// the stream resumes cleanly and memory stays flat (counted in `droppedPackets`).

import Foundation
import FFmpeg
import MediaCore

final class ChannelPacketQueue: @unchecked Sendable {
    struct Item {
        let packet: Packet
        let media: MediaType
    }

    enum Next {
        case item(Item)
        case timedOut
        /// Closed and empty: nothing more will come.
        case drained
    }

    // Everything below is guarded by `condition`.
    private let condition = NSCondition()
    private var ring: [Item?]
    private var head = 0
    private var count = 0
    private var pool: [Packet] = []
    private var discardingUntilKeyframe = false
    private var closed = false
    private var dropped: Int64 = 0
    let capacity: Int

    init(capacity: Int) {
        precondition(capacity > 0, "queue capacity must be positive")
        self.capacity = capacity
        ring = Array(repeating: nil, count: capacity)
    }

    /// Media thread: references `packet` into a pooled packet and queues it. Returns how many
    /// queued packets this call dropped because the queue was full (0 normally, also while
    /// discarding up to the next keyframe), so the owner logs once per overflow.
    func push(_ packet: Packet, media: MediaType) -> Int {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return 0 }
        let isKeyframe = media == .video && packet.isKeyframe
        var droppedNow = 0
        if count == capacity {
            droppedNow = count
            removeAll()
            discardingUntilKeyframe = true
        }
        if discardingUntilKeyframe {
            if !isKeyframe {
                dropped += Int64(droppedNow + 1)
                return droppedNow
            }
            discardingUntilKeyframe = false
        }
        dropped += Int64(droppedNow)
        let queued = pool.popLast() ?? Packet()
        packet.reference(into: queued)
        ring[(head + count) % capacity] = Item(packet: queued, media: media)
        count += 1
        condition.signal()
        return droppedNow
    }

    /// Sender thread: the oldest packet, waiting at most `seconds` for one.
    func next(waitingUpTo seconds: Double) -> Next {
        condition.lock()
        defer { condition.unlock() }
        if count == 0 && !closed { _ = condition.wait(until: Date(timeIntervalSinceNow: seconds)) }
        if count > 0 { return .item(popFirst()) }
        return closed ? .drained : .timedOut
    }

    /// Sender thread: gives a packet back to the pool once written or skipped.
    func recycle(_ packet: Packet) {
        packet.unref()
        condition.lock()
        if pool.count < capacity { pool.append(packet) }
        condition.unlock()
    }

    /// Sender thread, on a new connection: finds the newest queued video keyframe and drops
    /// the video before it and the audio older than it (`time` gives a packet's time in µs),
    /// so the connection starts on a keyframe with as little delay as possible. Returns the
    /// keyframe's time, or nil (nothing dropped) when no keyframe is queued yet.
    func skipToNewestKeyframe(time: (Item) -> Int64) -> (resumeAt: Int64, skipped: Int)? {
        condition.lock()
        defer { condition.unlock() }
        var newest: (offset: Int, time: Int64)? = nil
        for offset in 0..<count {
            if let item = ring[(head + offset) % capacity], item.media == .video, item.packet.isKeyframe {
                newest = (offset, time(item))
            }
        }
        guard let newest else { return nil }
        var kept: [Item] = []
        var skipped = 0
        for offset in 0..<count {
            let item = popFirst()
            if offset >= newest.offset || (item.media == .audio && time(item) >= newest.time) {
                kept.append(item)
            } else {
                recycleLocked(item.packet)
                skipped += 1
            }
        }
        for item in kept {
            ring[(head + count) % capacity] = item
            count += 1
        }
        dropped += Int64(skipped)
        return (newest.time, skipped)
    }

    /// Sender thread: waits up to `seconds` or until the queue is closed. Returns `isClosed`.
    func waitForClose(upTo seconds: Double) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if !closed { _ = condition.wait(until: Date(timeIntervalSinceNow: seconds)) }
        return closed
    }

    /// No more packets: the sender drains what is queued and stops.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    var isClosed: Bool {
        condition.lock()
        defer { condition.unlock() }
        return closed
    }

    /// Packets dropped so far (overflow and keyframe resynchronisation).
    var droppedPackets: Int64 {
        condition.lock()
        defer { condition.unlock() }
        return dropped
    }

    /// Drops everything queued (the destination has ended).
    func discardAll() {
        condition.lock()
        removeAll()
        condition.unlock()
    }

    private func popFirst() -> Item {
        let item = ring[head]!
        ring[head] = nil
        head = (head + 1) % capacity
        count -= 1
        return item
    }

    private func removeAll() {
        while count > 0 { recycleLocked(popFirst().packet) }
    }

    private func recycleLocked(_ packet: Packet) {
        packet.unref()
        if pool.count < capacity { pool.append(packet) }
    }
}
