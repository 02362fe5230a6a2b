// One viewer's send queue, bounded. Frames come in as the composition encodes them (shared
// with every other viewer); packets go out when polled: audio first (small, and what a viewer
// notices first), then video, at most at the pacing rate when one is set, so a keyframe does
// not hit the socket as one burst per viewer. A viewer that cannot keep up — its video backlog
// over `maxQueuedVideoPackets`, or its oldest waiting frame older than `maxQueueDelay` — is
// not queued for without bound: its waiting video is dropped and it skips to the next
// keyframe (delta frames until then would not decode), which the owner should ask for. A
// frame already partly sent is finished first, so the viewer never sees half a frame.
//
// Sequence numbers are given when a packet leaves (`RTPSendStream.writePacket`), so frames
// dropped here leave no gap for the viewer to NACK. Over UDP a viewer that stops reading does
// not push back: with `feedbackTimeout`, a viewer that has sent no RTCP for that long gets
// nothing released, its queue fills, and it is dropped to keyframes until it speaks again (or
// the owner times it out). Retransmissions do not pass through here.

public import MediaCore

public struct ViewerPacerConfiguration: Sendable, Equatable {
    /// Video packets that may wait; a frame that would go over drops the viewer to the next keyframe.
    public var maxQueuedVideoPackets: Int
    /// A video frame that waited longer (µs) drops the viewer to the next keyframe; audio that
    /// waited longer is dropped.
    public var maxQueueDelay: Int64
    /// Audio frames that may wait; the oldest goes first (each Opus packet stands alone).
    public var maxQueuedAudioFrames: Int
    /// At most one packet per token (a burst, then one each `interval` µs); nil: as fast as polled.
    public var pacing: TokenBucket.Rate?
    /// Release nothing while the viewer has been silent (no RTCP) this long, µs; nil: never hold back.
    public var feedbackTimeout: Int64?
    /// A new viewer gets no video before a keyframe (it could not decode it).
    public var startsAtKeyframe: Bool

    public init(maxQueuedVideoPackets: Int = 1000, maxQueueDelay: Int64 = 500_000, maxQueuedAudioFrames: Int = 50,
                pacing: TokenBucket.Rate? = nil, feedbackTimeout: Int64? = 3_000_000, startsAtKeyframe: Bool = true) {
        self.maxQueuedVideoPackets = maxQueuedVideoPackets
        self.maxQueueDelay = maxQueueDelay
        self.maxQueuedAudioFrames = max(1, maxQueuedAudioFrames)
        self.pacing = pacing
        self.feedbackTimeout = feedbackTimeout
        self.startsAtKeyframe = startsAtKeyframe
    }
}

/// What became of a frame offered to a viewer's queue.
public enum PacerAdmission: Sendable, Equatable {
    case queued
    /// A delta frame while the viewer waits for a keyframe: not sent.
    case skippedUntilKeyframe
    /// The viewer was behind: `frames` waiting video frames were dropped. When
    /// `waitingForKeyframe`, the frame offered went too and video resumes at the next
    /// keyframe: ask for one (`KeyframeRequestGate`, `.viewerBehind`). Otherwise the frame
    /// offered was a keyframe and is queued.
    case droppedBacklog(frames: Int, waitingForKeyframe: Bool)
}

/// The next packet to send: packet `index` of `frame` (write it with the stream of its media type).
public struct PacedPacket: Sendable, Equatable {
    public let frame: PacketizedFrame
    public let index: Int
}

public struct ViewerPacer: Sendable {
    public let configuration: ViewerPacerConfiguration

    public private(set) var framesQueued: Int64 = 0
    public private(set) var packetsReleased: Int64 = 0
    /// Times the viewer was dropped to the next keyframe.
    public private(set) var dropsToKeyframe: Int64 = 0
    /// Video frames (and their packets) dropped from the queue as backlog.
    public private(set) var videoFramesDropped: Int64 = 0
    public private(set) var videoPacketsDropped: Int64 = 0
    /// Delta frames not queued while waiting for a keyframe.
    public private(set) var framesSkippedUntilKeyframe: Int64 = 0
    /// Audio frames dropped as too old or over the bound.
    public private(set) var audioFramesDropped: Int64 = 0
    /// Polls that released nothing because the viewer was silent.
    public private(set) var pollsHeldForSilence: Int64 = 0
    /// The most video packets that ever waited at once.
    public private(set) var peakQueuedVideoPackets: Int = 0
    public private(set) var queuedVideoPackets: Int = 0

    private struct Entry: Sendable {
        var frame: PacketizedFrame
        var next: Int
        let enqueuedAt: Int64
        var isStarted: Bool { next > 0 }
    }

    private var video = FrameQueue<Entry>()
    private var audio = FrameQueue<Entry>()
    private var waitingForKeyframe: Bool
    private var bucket: TokenBucket?
    private var bucketUpdatedAt: Int64?
    /// The first frame's arrival, then the last RTCP's: what silence is counted from.
    private var heardAt: Int64?

    public init(configuration: ViewerPacerConfiguration = ViewerPacerConfiguration()) {
        self.configuration = configuration
        waitingForKeyframe = configuration.startsAtKeyframe
        bucket = configuration.pacing.map(TokenBucket.init(rate:))
    }

    public var isWaitingForKeyframe: Bool { waitingForKeyframe }
    public var queuedAudioFrames: Int { audio.count }
    public var isEmpty: Bool { video.isEmpty && audio.isEmpty }

    // MARK: Events

    /// Offers the viewer a frame at `now`.
    public mutating func enqueue(_ frame: PacketizedFrame, now: Int64) -> PacerAdmission {
        if heardAt == nil { heardAt = now }
        guard frame.packetCount > 0 else { return .queued }
        if frame.mediaType != .video {
            enqueueAudio(frame, now: now)
            return .queued
        }
        if waitingForKeyframe {
            guard frame.isKeyframe else {
                framesSkippedUntilKeyframe += 1
                return .skippedUntilKeyframe
            }
            waitingForKeyframe = false
            appendVideo(frame, now: now)
            return .queued
        }
        // The frames not yet started: what can still be dropped, and whose age counts.
        let waiting = video.first.map { $0.isStarted ? 1 : 0 } ?? 0
        let oldest = video.count > waiting ? video[waiting].enqueuedAt : nil
        let tooOld = oldest.map { now - $0 > configuration.maxQueueDelay } ?? false
        let tooMany = queuedVideoPackets + frame.packetCount > configuration.maxQueuedVideoPackets
        guard tooOld || tooMany else {
            appendVideo(frame, now: now)
            return .queued
        }
        // Behind: everything not yet started goes.
        var dropped = 0
        while video.count > waiting {
            let entry = video.removeLast()
            queuedVideoPackets -= entry.frame.packetCount
            videoPacketsDropped += Int64(entry.frame.packetCount)
            dropped += 1
        }
        videoFramesDropped += Int64(dropped)
        if frame.isKeyframe {
            // Skipping to this keyframe is the same as waiting for it.
            appendVideo(frame, now: now)
            return .droppedBacklog(frames: dropped, waitingForKeyframe: false)
        }
        videoFramesDropped += 1
        videoPacketsDropped += Int64(frame.packetCount)
        dropsToKeyframe += 1
        waitingForKeyframe = true
        return .droppedBacklog(frames: dropped + 1, waitingForKeyframe: true)
    }

    /// RTCP from the viewer arrived at `now`: it is reading.
    public mutating func feedbackReceived(now: Int64) {
        heardAt = max(heardAt ?? now, now)
    }

    /// How long the viewer has been silent at `now` (µs since its last RTCP, or since the first
    /// frame before any): what the owner times viewers out by.
    public func silence(now: Int64) -> Int64 {
        heardAt.map { max(0, now - $0) } ?? 0
    }

    /// Whether nothing is released at `now` because the viewer has been silent too long.
    public func isHeldForSilence(now: Int64) -> Bool {
        guard let timeout = configuration.feedbackTimeout else { return false }
        return silence(now: now) > timeout
    }

    /// The next packet to send at `now`; call until nil.
    public mutating func poll(now: Int64) -> PacedPacket? {
        guard !isEmpty else { return nil }
        if isHeldForSilence(now: now) {
            pollsHeldForSilence += 1
            return nil
        }
        if bucket != nil {
            bucket!.refill(at: now)
            bucketUpdatedAt = max(bucketUpdatedAt ?? now, now)
            guard bucket!.hasToken else { return nil }
            bucket!.consume()
        }
        packetsReleased += 1
        if !audio.isEmpty {
            let entry = audio.removeFirst()
            return PacedPacket(frame: entry.frame, index: 0)
        }
        let frame = video[0].frame
        let index = video[0].next
        queuedVideoPackets -= 1
        if index + 1 == frame.packetCount {
            _ = video.removeFirst()
        } else {
            video[0].next = index + 1
        }
        return PacedPacket(frame: frame, index: index)
    }

    /// When `poll` next has a packet; nil when the queue is empty or the viewer is silent
    /// (then nothing changes until it speaks).
    public func nextDeadline(now: Int64) -> Int64? {
        guard !isEmpty, !isHeldForSilence(now: now) else { return nil }
        guard let bucket, let updated = bucketUpdatedAt else { return now }
        return max(now, updated &+ bucket.waitForToken)
    }

    // MARK: Queues

    private mutating func appendVideo(_ frame: PacketizedFrame, now: Int64) {
        video.append(Entry(frame: frame, next: 0, enqueuedAt: now))
        queuedVideoPackets += frame.packetCount
        peakQueuedVideoPackets = max(peakQueuedVideoPackets, queuedVideoPackets)
        framesQueued += 1
    }

    private mutating func enqueueAudio(_ frame: PacketizedFrame, now: Int64) {
        while let first = audio.first,
              now - first.enqueuedAt > configuration.maxQueueDelay || audio.count >= configuration.maxQueuedAudioFrames {
            _ = audio.removeFirst()
            audioFramesDropped += 1
        }
        audio.append(Entry(frame: frame, next: 0, enqueuedAt: now))
        framesQueued += 1
    }
}

/// A FIFO on an array: removal from the front moves a head index and clears the slot (so the
/// frame is released); the dead prefix is cut off now and then, keeping the capacity.
struct FrameQueue<Element: Sendable>: Sendable {
    private var storage: [Element?] = []
    private var head = 0

    var count: Int { storage.count - head }
    var isEmpty: Bool { head == storage.count }
    var first: Element? { isEmpty ? nil : storage[head] }

    subscript(offset: Int) -> Element {
        get { storage[head + offset]! }
        set { storage[head + offset] = newValue }
    }

    mutating func append(_ element: Element) {
        if head > 0, head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 32, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        storage.append(element)
    }

    mutating func removeFirst() -> Element {
        let element = storage[head]!
        storage[head] = nil
        head += 1
        return element
    }

    mutating func removeLast() -> Element {
        storage.removeLast()!
    }
}
