// A live stage as a composition sees it: whoever publishes now, each through the same
// ParticipantSubscriber (decode → latest frame / audio ring) recorded stages use, fed from
// this composition's queue of that publisher's packets. Runs on the composition thread; the
// only shared state it touches is the subscription's snapshot and the queues.

public import FFmpeg
import Layout
public import Logging
public import MediaCore
public import LiveStage

public final class LiveStageSource: StageSource {
    private struct Active {
        var generation: UInt64
        var publisher: LivePublisher
        var subscriber: ParticipantSubscriber
        /// Set once the publisher has left: shown until then, while its queued media plays out.
        var departAt: Int64?
    }

    public let stageArn: String
    private let subscription: LiveStageSubscription
    private let hub: LiveStageHub
    private let logger: Logger
    private var seenVersion: UInt64?
    private var active: [String: Active] = [:]
    private var states: [StageParticipantState] = []
    private var hasDepartures = false
    /// Stage-clock µs of the composition's first frame.
    public private(set) var origin: Int64

    public init(hub: LiveStageHub, stageArn: String, logger: Logger) {
        self.hub = hub
        self.stageArn = stageArn
        self.logger = logger
        subscription = hub.subscribe(stageArn: stageArn)
        origin = hub.clock.now().microsecondsValue
        states.reserveCapacity(16)
    }

    deinit { subscription.cancel() }

    /// Sets the composition's time zero to now; returns it (the pacer's origin).
    @discardableResult
    public func startClock() -> Int64 {
        origin = hub.clock.now().microsecondsValue
        return origin
    }

    /// A pacer on the stage clock, starting at this composition's origin.
    public func makePacer() -> ClockPacer { ClockPacer(clock: hub.clock, origin: origin) }

    public var duration: MediaTime? { nil }

    /// The wall-clock time of this composition's time zero.
    public var wallClockOriginMs: Int64? { hub.wallClockMs(atStageMicroseconds: origin) }

    public func subscriber(for participantId: String) -> ParticipantSubscriber? { active[participantId]?.subscriber }

    /// How the media of each participant on the stage now has reached this composition so
    /// far. Read on the composition thread (the subscribers' counters are its own).
    public func delivery() -> [LiveDelivery] {
        subscription.snapshot().entries.map { entry in
            let id = entry.publisher.identity.participantId
            let subscriber = active[id]?.subscriber
            return LiveDelivery(participantId: id, droppedPackets: entry.queue.counters.dropped,
                                lateVideoFrames: subscriber?.lateVideoFrames ?? 0,
                                audioGapSeconds: Double(subscriber?.audioGapSamples ?? 0) / Double(subscriber?.mixRate ?? 48_000),
                                allowance: entry.publisher.allowance)
        }
    }

    public func participants(at stageTime: MediaTime) -> [StageParticipantState] {
        let now = origin + stageTime.microsecondsValue
        refresh(now: now)
        if hasDepartures { expireDepartures(now: now) }
        // Video counts as stopped once nothing arrived for a while (RTMP has no signal for
        // it); compared at the time the media now shown arrived, i.e. now minus the latency.
        let shownArrival = origin + stageTime.microsecondsValue - hub.settings.latency
        for index in states.indices {
            guard let entry = active[states[index].participantId] else { continue }
            let stopped = entry.publisher.lastVideoArrival.map { shownArrival - $0 > hub.settings.videoStoppedAfter } ?? false
            if states[index].isVideoStopped != stopped { states[index].isVideoStopped = stopped }
        }
        return states
    }

    /// Publishers that left and whose queued media has played out leave the composition.
    private func expireDepartures(now: Int64) {
        hasDepartures = false
        for (id, entry) in active {
            guard let departAt = entry.departAt else { continue }
            guard departAt <= now else {
                hasDepartures = true
                continue
            }
            active[id] = nil
            states.removeAll { $0.participantId == id }
            logger.info("live participant left the composition", metadata: ["participant.id": "\(id)"])
        }
    }

    /// Follows joins and leaves (only when the subscription changed: no work per frame).
    private func refresh(now: Int64) {
        let version = subscription.version
        guard version != seenVersion else { return }
        let snapshot = subscription.snapshot()
        seenVersion = snapshot.version
        var present: Set<String> = []
        for entry in snapshot.entries {
            let id = entry.publisher.identity.participantId
            present.insert(id)
            if let current = active[id], current.generation == entry.publisher.generation { continue }
            var participantLogger = logger
            participantLogger[metadataKey: "participant.id"] = "\(id)"
            do {
                let source = LiveMediaSource(queue: entry.queue, origin: origin, logger: participantLogger)
                let subscriber = try ParticipantSubscriber(participantId: id, source: source, offset: .zero,
                                                           logger: participantLogger)
                active[id] = Active(generation: entry.publisher.generation, publisher: entry.publisher, subscriber: subscriber)
                participantLogger.info("live participant subscribed")
            } catch {
                participantLogger.error("cannot subscribe to live participant", metadata: ["error": "\(error)"])
            }
        }
        for (id, entry) in active where !present.contains(id) && entry.departAt == nil {
            // Gone from the stage: its tile and voice stay until what it sent has played.
            active[id]?.departAt = entry.publisher.departureTime ?? now
            hasDepartures = true
        }
        states = active.values.map { entry in
            let identity = entry.publisher.identity
            return StageParticipantState(participantId: identity.participantId, userId: identity.userId,
                                         attributes: entry.publisher.attributes, isPublished: true, isVideoStopped: false,
                                         isAudioMuted: false, arrivalIndex: entry.publisher.arrivalIndex)
        }
        states.sort { $0.arrivalIndex < $1.arrivalIndex }
    }
}

/// One participant's media as it reached a composition, counted since it joined.
public struct LiveDelivery: Sendable, Equatable {
    public var participantId: String
    /// Packets the composition's queue dropped (the composition fell behind): a freeze until
    /// the next keyframe.
    public var droppedPackets: Int64
    /// Video frames shown after the tick they were due at: they arrived after the jitter
    /// allowance (a held or skipped picture).
    public var lateVideoFrames: Int64
    /// Sound the participant did not send, heard as silence: audio that arrived after its
    /// time, and the gaps its timeline stepped over when the allowance grew.
    public var audioGapSeconds: Double
    /// The publisher's jitter allowance now, and its steps up since it joined.
    public var allowance: LiveAllowance

    public init(participantId: String, droppedPackets: Int64, lateVideoFrames: Int64, audioGapSeconds: Double,
                allowance: LiveAllowance) {
        self.participantId = participantId
        self.droppedPackets = droppedPackets
        self.lateVideoFrames = lateVideoFrames
        self.audioGapSeconds = audioGapSeconds
        self.allowance = allowance
    }
}

/// One publisher's packets as a ParticipantMediaSource: stream setups become decoder
/// parameters, payloads become FFmpeg packets stamped in stage-clock µs.
public final class LiveMediaSource: ParticipantMediaSource {
    private let queue: LiveMediaQueue
    private let origin: Int64
    private let logger: Logger
    private var setups: [MediaType: MediaStreamSetup] = [:]
    private static let timeBase = Rational(1, 1_000_000)

    public init(queue: LiveMediaQueue, origin: Int64, logger: Logger) {
        self.queue = queue
        self.origin = origin
        self.logger = logger
    }

    public func stream(_ type: MediaType) -> MediaStreamSetup? { setups[type] }

    public func read(into packet: Packet) throws(FFmpegError) -> MediaSourceRead {
        while true {
            switch queue.pop() {
            case .empty: return .wouldBlock
            case .ended: return .endOfMedia
            case .packet(let live):
                switch live.content {
                case .configuration(let configuration):
                    do {
                        let parameters = try CodecParameters(configuration)
                        let previous = setups[live.type]
                        let info = StreamInfo(index: live.type == .video ? 0 : 1, type: live.type, codecName: parameters.codecName,
                                              timeBase: Self.timeBase, width: configuration.width, height: configuration.height,
                                              sampleRate: configuration.sampleRate, channelCount: configuration.channelCount,
                                              rotationDegrees: 0, startTime: nil)
                        let sameCodec = previous?.info.codecName == info.codecName
                        setups[live.type] = MediaStreamSetup(info: info, parameters: parameters,
                                                             inBandExtradata: sameCodec ? configuration.extradata : nil)
                        return .streamChanged(live.type)
                    } catch {
                        logger.warning("unusable stream setup from the publisher", metadata: ["error": "\(error)"])
                        continue
                    }
                case .data(let bytes):
                    guard let setup = setups[live.type] else { continue }
                    try packet.fill(bytes)
                    packet.pts = live.pts
                    packet.dts = live.dts
                    packet.isKeyframe = live.isKeyframe
                    packet.streamIndex = setup.info.index
                    return .packet(live.type)
                }
            }
        }
    }

    /// The composition's tile size becomes this queue's demand on the publisher.
    public func drawnSizeChanged(_ size: PixelSize?) {
        queue.videoDemand = size.map { .atLeast(width: $0.width, height: $0.height) } ?? .none
    }

    /// Packets carry absolute stage-clock µs; the composition's time zero is `origin`.
    public var startTimeMicroseconds: Int64? { origin }
    public var durationMicroseconds: Int64? { nil }
    public var isLive: Bool { true }
}

/// Paces a composition on a MediaClock: the wall clock in the daemon, a manual clock in
/// tests (where waiting advances virtual time).
public struct ClockPacer: Pacer {
    public let clock: any MediaClock
    public let origin: Int64

    public init(clock: any MediaClock, origin: Int64) {
        self.clock = clock
        self.origin = origin
    }

    public mutating func wait(until stageTime: MediaTime) -> Int64 {
        let deadline = origin + stageTime.microsecondsValue
        let now = clock.now().microsecondsValue
        guard deadline > now else { return now - deadline }
        clock.sleepBlocking(until: .microseconds(deadline))
        return 0
    }
}
