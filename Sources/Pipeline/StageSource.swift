// Who is on the stage at a given instant. A recorded stage answers from its manifest; RTMP
// ingest (later) answers from live connections. The session asks once per output frame.

public import MediaCore
import Layout
public import Stages
public import Logging
public import FFmpeg

/// One participant as the compositor sees them at an instant.
public struct StageParticipantState: Sendable, Equatable {
    public var participantId: String
    public var userId: String
    public var attributes: [String: String]
    public var isPublished: Bool
    public var isVideoStopped: Bool
    public var isAudioMuted: Bool
    /// Arrival order: stage time of first publish (ms), then manifest order.
    public var arrivalIndex: Int

    public init(participantId: String, userId: String, attributes: [String: String], isPublished: Bool,
                isVideoStopped: Bool, isAudioMuted: Bool, arrivalIndex: Int) {
        self.participantId = participantId
        self.userId = userId
        self.attributes = attributes
        self.isPublished = isPublished
        self.isVideoStopped = isVideoStopped
        self.isAudioMuted = isAudioMuted
        self.arrivalIndex = arrivalIndex
    }
}

public protocol StageSource: AnyObject {
    var stageArn: String { get }
    /// Every participant the stage knows, published or not, in a stable order.
    func participants(at stageTime: MediaTime) -> [StageParticipantState]
    /// The media of a participant, opened once; nil when they have none.
    func subscriber(for participantId: String) -> ParticipantSubscriber?
    /// Length of a recorded stage; nil for a live one.
    var duration: MediaTime? { get }
    /// Wall-clock time (ms since 1970) of stage time 0, when known; asked when output starts.
    var wallClockOriginMs: Int64? { get }
    /// A producer's changes on the stage's own timeline (a recorded stage's directions), in
    /// time order: each applies from the first output frame at or after its time.
    var scheduledDirections: [ScheduledDirection] { get }
}

extension StageSource {
    public var wallClockOriginMs: Int64? { nil }
    public var scheduledDirections: [ScheduledDirection] { [] }
}

/// A change at a stage time (µs).
public struct ScheduledDirection: Sendable, Equatable {
    public var atMicroseconds: Int64
    public var change: CompositionDirection

    public init(atMicroseconds: Int64, change: CompositionDirection) {
        self.atMicroseconds = atMicroseconds
        self.change = change
    }
}

/// A recorded stage: the manifest's timeline drives who is published; media is pulled from
/// files as the composition clock advances (at any speed).
public final class RecordedStageSource: StageSource {
    public let stage: RecordedStage
    private var subscribers: [String: ParticipantSubscriber] = [:]
    private let arrival: [String: Int]
    /// Every instant (ms) at which someone's state changes, ascending.
    private let changeTimes: [Int64]
    /// The answer for [cachedFrom, cachedUntil): the stage only changes at timeline events, so
    /// most frames reuse it without recomputing or allocating.
    private var cached: [StageParticipantState] = []
    private var cachedFrom: Int64 = .max
    private var cachedUntil: Int64 = .min
    /// Attributes set by the manifest's directions, by participant, in time order.
    private let attributeChanges: [String: [(atMs: Int64, attributes: [String: String])]]
    /// The manifest's layout, audio and overlay directions.
    public let scheduledDirections: [ScheduledDirection]

    /// Opens every participant's media and prepares the directions' overlays (their files
    /// from `overlayAssets`, default: the stage's folder). A file that cannot be opened, or
    /// overlays that cannot be prepared, is an error naming it.
    public init(stage: RecordedStage, limits: DecoderLimits = DecoderLimits(), overlayAssets: OverlayAssets? = nil,
                logger: Logger) throws(PipelineError) {
        self.stage = stage
        var arrival: [String: Int] = [:]
        let ordered = stage.manifest.participants.enumerated().sorted { a, b in
            let ta = a.element.timeline.first { $0.event == .publish }?.atMs ?? Int64.max
            let tb = b.element.timeline.first { $0.event == .publish }?.atMs ?? Int64.max
            return (ta, a.offset) < (tb, b.offset)
        }
        for (rank, entry) in ordered.enumerated() { arrival[entry.element.participantId] = rank }
        self.arrival = arrival
        let directions = stage.manifest.directions ?? []
        var attributeChanges: [String: [(atMs: Int64, attributes: [String: String])]] = [:]
        for direction in directions {
            for (id, attributes) in direction.attributes ?? [:] { attributeChanges[id, default: []].append((direction.atMs, attributes)) }
        }
        self.attributeChanges = attributeChanges
        let assets = overlayAssets ?? OverlayAssets(directory: stage.directory.path)
        var scheduled: [ScheduledDirection] = []
        for (index, direction) in directions.enumerated() {
            guard direction.layout != nil || !(direction.audio ?? [:]).isEmpty || direction.overlays != nil else { continue }
            var overlays: PreparedOverlays?
            if let configuration = direction.overlays {
                do throws(LayoutValidationError) {
                    overlays = try assets.prepare(configuration, prefix: "directions[\(index)].overlays")
                } catch {
                    throw .media(file: stage.directory.appendingPathComponent(RecordedStage.manifestName).path, message: error.description)
                }
            }
            scheduled.append(ScheduledDirection(atMicroseconds: direction.atMs * 1000, change: CompositionDirection(
                layout: direction.layout, transitionMs: direction.transitionMs ?? 0, audio: direction.audio ?? [:], overlays: overlays)))
        }
        scheduledDirections = scheduled
        changeTimes = Array(Set(stage.manifest.participants.flatMap { $0.timeline.map(\.atMs) }
            + directions.filter { $0.attributes != nil }.map(\.atMs))).sorted()
        for participant in stage.manifest.participants {
            let files = participant.mediaFiles
            guard let first = files.first else { continue }
            var participantLogger = logger
            participantLogger[metadataKey: "participant.id"] = "\(participant.participantId)"
            var parts: [SequentialMediaSource.Part] = []
            for file in files {
                let path = stage.path(of: file.media)
                do {
                    parts.append(.init(source: try DemuxerMediaSource(url: path), offsetMicroseconds: file.mediaOffsetMs * 1000))
                } catch {
                    throw PipelineError.media(file: path, message: error.description)
                }
            }
            let source: any ParticipantMediaSource = parts.count == 1 ? parts[0].source : SequentialMediaSource(parts: parts)
            do {
                subscribers[participant.participantId] = try ParticipantSubscriber(
                    participantId: participant.participantId, source: source, offset: .milliseconds(first.mediaOffsetMs),
                    limits: limits, maxForwardGap: Self.mediaGapAllowance(participant),
                    wallClockTimed: stage.manifest.startedAt != nil, logger: participantLogger)
            } catch {
                throw PipelineError.media(file: stage.path(of: first.media), message: error.description)
            }
        }
    }

    /// The longest jump forward in a participant's media taken as real time rather than a
    /// broken timestamp: 10 s, or longer when the timeline says the participant was away
    /// longer (an individual recording keeps its reconnect gaps in its timestamps).
    static func mediaGapAllowance(_ participant: StageParticipantManifest) -> Int64 {
        var allowance: Int64 = 10_000_000
        var leftAt: Int64?
        for event in participant.timeline {
            switch event.event {
            case .unpublish: leftAt = event.atMs
            case .publish:
                if let leftAt { allowance = max(allowance, (event.atMs - leftAt + 2000) * 1000) }
                leftAt = nil
            default: break
            }
        }
        return allowance
    }

    /// The manifest's `startedAt`, when it has one.
    public var wallClockOriginMs: Int64? { stage.manifest.startedAtMs }

    public var stageArn: String { stage.manifest.stageArn }

    public func participants(at stageTime: MediaTime) -> [StageParticipantState] {
        let ms = stageTime.microsecondsValue / 1000
        if ms >= cachedFrom && ms < cachedUntil { return cached }
        // The state holds from the last change at or before `ms` until the next change.
        let next = changeTimes.firstIndex { $0 > ms }
        cachedUntil = next.map { changeTimes[$0] } ?? .max
        cachedFrom = next.map { $0 > 0 ? changeTimes[$0 - 1] : .min } ?? (changeTimes.last ?? .min)
        cached = stage.manifest.participants.map { participant in
            let state = participant.state(atMs: ms)
            return StageParticipantState(
                participantId: participant.participantId, userId: participant.userId,
                attributes: attributeChanges[participant.participantId]?.last(where: { $0.atMs <= ms })?.attributes
                    ?? participant.attributes,
                isPublished: state.isPublished,
                isVideoStopped: state.isVideoStopped, isAudioMuted: state.isAudioMuted,
                arrivalIndex: arrival[participant.participantId] ?? 0)
        }
        return cached
    }

    public func subscriber(for participantId: String) -> ParticipantSubscriber? { subscribers[participantId] }

    /// The manifest's durationMs, else the later of the last timeline event and the end of
    /// the last participant's media.
    public var duration: MediaTime? {
        if let ms = stage.manifest.durationMs { return .milliseconds(ms) }
        var end: Int64 = 0
        for participant in stage.manifest.participants {
            end = max(end, (participant.timeline.last?.atMs ?? 0) * 1000)
            if let mediaEnd = subscribers[participant.participantId]?.mediaEndTime { end = max(end, mediaEnd) }
        }
        return .microseconds(max(end, 1_000_000))
    }
}
