// The hand-off between a publisher's connection (a NIO event loop: parse, timestamp, push)
// and a composition's thread (pop, decode). One queue per composition per publisher,
// bounded in packets and bytes; a consumer that falls too far behind loses the stale media
// and resumes at the next keyframe, and never slows the publisher or other compositions.

public import MediaCore
import Dispatch
import Synchronization

/// One compressed packet (or a stream setup) on its way to a composition.
public struct LiveMediaPacket: Sendable {
    public enum Content: Sendable {
        /// The publisher (re)announced this stream's codec setup.
        case configuration(CodecConfiguration)
        /// Coded media (length-prefixed NAL units, AAC raw frames ...).
        case data([UInt8])
    }

    public var type: MediaType
    public var content: Content
    /// Stage-clock presentation and decode times (µs).
    public var pts: Int64
    public var dts: Int64
    public var isKeyframe: Bool

    public init(type: MediaType, content: Content, pts: Int64, dts: Int64, isKeyframe: Bool) {
        self.type = type
        self.content = content
        self.pts = pts
        self.dts = dts
        self.isKeyframe = isKeyframe
    }

    var byteCount: Int {
        switch content {
        case .configuration(let configuration): configuration.extradata.count
        case .data(let bytes): bytes.count
        }
    }

    var isConfiguration: Bool {
        if case .configuration = content { return true }
        return false
    }
}

/// What the consumer gets.
public enum LiveQueueRead: Sendable {
    case packet(LiveMediaPacket)
    case empty
    /// The publisher is gone and everything it sent has been read.
    case ended
}

public struct LiveQueueLimits: Sendable, Equatable {
    public var packets: Int
    public var bytes: Int

    /// About 10 s of a 720p30 publisher at 8.5 Mbps: far more than the latency ever holds.
    public init(packets: Int = 1024, bytes: Int = 12 << 20) {
        self.packets = packets
        self.bytes = bytes
    }
}

/// How large a consumer needs a publisher's picture: a publisher with several sizes to send
/// (WebRTC simulcast) sends the smallest that every consumer's demand is covered by.
public enum LiveVideoDemand: Sendable, Equatable {
    /// The whole picture at its largest (a recording, a replica, a relay): the default.
    case largest
    /// A picture at least this large in both dimensions (a composition's tile).
    case atLeast(width: Int, height: Int)
    /// Not shown now (a composition that hides the publisher): asks for nothing.
    case none

    /// What satisfies every one of `demands`: the largest if any wants it, else the
    /// dimensions' maxima; `.none` when nobody asks for anything.
    public static func combined(_ demands: some Sequence<LiveVideoDemand>) -> LiveVideoDemand {
        var result = LiveVideoDemand.none
        for demand in demands {
            switch (result, demand) {
            case (.largest, _), (_, .none): continue
            case (_, .largest): result = .largest
            case (.none, .atLeast): result = demand
            case (.atLeast(let w, let h), .atLeast(let width, let height)):
                result = .atLeast(width: max(w, width), height: max(h, height))
            }
        }
        return result
    }
}

public final class LiveMediaQueue: Sendable {
    private struct State {
        /// What this queue's consumer needs of the publisher's picture.
        var videoDemand = LiveVideoDemand.largest
        var ring = PacketRing()
        var bytes = 0
        var ended = false
        /// Video waits for a keyframe (at the start, and after an overflow).
        var videoNeedsKeyframe = true
        var droppedPackets: Int64 = 0
        var overflows: Int64 = 0
        /// The consumer sleeps in `waitForPacket` until the next push or the end.
        var consumerWaiting = false

        /// Whether to wake the consumer (once per wait).
        mutating func takeWaiter() -> Bool {
            defer { consumerWaiting = false }
            return consumerWaiting
        }
    }

    private let state = Mutex(State())
    private let doorbell = DispatchSemaphore(value: 0)
    public let limits: LiveQueueLimits

    public init(limits: LiveQueueLimits = LiveQueueLimits()) {
        self.limits = limits
    }

    /// Adds a packet (producer side). Never blocks; on overflow the queued media is dropped
    /// (stream setups are kept) and video resumes at the next keyframe. True when this push
    /// overflowed the queue and its video now waits for a keyframe (worth asking for one).
    @discardableResult
    public func push(_ packet: LiveMediaPacket) -> Bool {
        let (overflowed, wake) = state.withLock { state in
            let overflowed = Self.push(packet, into: &state, limits: limits)
            return (overflowed, state.ring.count > 0 && state.takeWaiter())
        }
        if wake { doorbell.signal() }
        return overflowed
    }

    private static func push(_ packet: LiveMediaPacket, into state: inout State, limits: LiveQueueLimits) -> Bool {
        do {
            guard !state.ended else { return false }
            if packet.type == .video, !packet.isConfiguration {
                if state.videoNeedsKeyframe {
                    guard packet.isKeyframe else {
                        state.droppedPackets += 1
                        return false
                    }
                    state.videoNeedsKeyframe = false
                }
            }
            if state.ring.count + 1 > limits.packets || state.bytes + packet.byteCount > limits.bytes {
                state.overflows += 1
                let before = state.ring.count
                state.ring.removeAll { !$0.isConfiguration }
                state.droppedPackets += Int64(before - state.ring.count)
                state.bytes = state.ring.totalBytes
                if packet.type == .video, !packet.isConfiguration, !packet.isKeyframe {
                    state.videoNeedsKeyframe = true
                    state.droppedPackets += 1
                    return true
                }
                // Video queued before this packet is gone: the next video packet must be a keyframe.
                if packet.type != .video || packet.isConfiguration {
                    state.videoNeedsKeyframe = true
                    state.ring.append(packet)
                    state.bytes += packet.byteCount
                    return true
                }
            }
            state.ring.append(packet)
            state.bytes += packet.byteCount
            return false
        }
    }

    /// Blocks the consumer's thread (never an async context) until a packet is queued, the
    /// publisher has left, or `timeout` passes: a consumer that has emptied the queue waits
    /// for the producer instead of polling.
    public func waitForPacket(timeout: Duration) {
        let mustWait = state.withLock { state in
            guard state.ring.count == 0, !state.ended else { return false }
            state.consumerWaiting = true
            return true
        }
        guard mustWait else { return }
        let nanoseconds = max(0, min(timeout.components.seconds, 86_400)) &* 1_000_000_000
            &+ timeout.components.attoseconds / 1_000_000_000
        _ = doorbell.wait(timeout: .now() + .nanoseconds(Int(nanoseconds)))
    }

    /// Takes the oldest packet (consumer side).
    public func pop() -> LiveQueueRead {
        state.withLock { state in
            if let packet = state.ring.popFirst() {
                state.bytes -= packet.byteCount
                return .packet(packet)
            }
            return state.ended ? .ended : .empty
        }
    }

    /// The publisher left: the consumer reads what is queued, then `.ended`.
    public func finish() {
        let wake = state.withLock { state in
            state.ended = true
            return state.takeWaiter()
        }
        if wake { doorbell.signal() }
    }

    /// How large the consumer needs the publisher's picture (the consumer sets it; the
    /// publisher's connection reads the queues' demands combined).
    public var videoDemand: LiveVideoDemand {
        get { state.withLock { $0.videoDemand } }
        set { state.withLock { $0.videoDemand = newValue } }
    }

    public var counters: (queued: Int, bytes: Int, dropped: Int64, overflows: Int64) {
        state.withLock { ($0.ring.count, $0.bytes, $0.droppedPackets, $0.overflows) }
    }
}

/// A growable ring of packets: O(1) append and pop, storage reused once grown.
struct PacketRing {
    private var storage: [LiveMediaPacket?] = []
    private var head = 0
    private(set) var count = 0

    mutating func append(_ packet: LiveMediaPacket) {
        if count == storage.count {
            // Grow, unrolling the ring so the order stays head...tail.
            var grown: [LiveMediaPacket?] = []
            grown.reserveCapacity(max(16, storage.count * 2))
            for index in 0..<count { grown.append(storage[(head + index) % storage.count]) }
            grown.append(contentsOf: repeatElement(nil, count: max(16, storage.count * 2) - count))
            storage = grown
            head = 0
        }
        storage[(head + count) % storage.count] = packet
        count += 1
    }

    mutating func popFirst() -> LiveMediaPacket? {
        guard count > 0 else { return nil }
        let packet = storage[head]
        storage[head] = nil
        head = (head + 1) % storage.count
        count -= 1
        return packet
    }

    /// Keeps the packets for which `shouldRemove` is false, in order.
    mutating func removeAll(where shouldRemove: (LiveMediaPacket) -> Bool) {
        var kept: [LiveMediaPacket] = []
        while let packet = popFirst() {
            if !shouldRemove(packet) { kept.append(packet) }
        }
        for packet in kept { append(packet) }
    }

    var totalBytes: Int {
        var total = 0
        for index in 0..<count { total += storage[(head + index) % storage.count]?.byteCount ?? 0 }
        return total
    }
}
