// A recorded stage: `manifest.json` in a directory, next to the participants' media.
// The manifest is the stage's whole story — who was there, with which attributes, what they
// published and when — on one clock that starts at 0 ms.

public import Layout
public import MediaCore

/// What happened to a participant's publication at one instant of the stage clock.
public enum StageEventKind: String, Codable, Sendable, CaseIterable {
    case publish, unpublish, videoStopped, videoStarted, audioMuted, audioUnmuted

    /// Decodes the event name; an unknown name fails with the list of valid ones, at the
    /// event's own coding path (`participants[i].timeline[j].event`).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let name = try container.decode(String.self)
        guard let kind = StageEventKind(rawValue: name) else {
            let valid = StageEventKind.allCases.map(\.rawValue).joined(separator: ", ")
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "unknown event '\(name)' (expected one of: \(valid))")
        }
        self = kind
    }
}

/// Rejects fields a type does not know, so a typo (`mediaOffsetMS`) is an error instead of
/// a silently ignored setting.
struct UnknownFieldCheck {
    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    static func check(_ decoder: any Decoder, known: [String]) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        for key in container.allKeys where !known.contains(key.stringValue) {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath + [key],
                debugDescription: "unknown field (expected one of: \(known.joined(separator: ", ")))"))
        }
    }
}

public struct StageTimelineEvent: Codable, Hashable, Sendable {
    /// Milliseconds from the start of the stage.
    public var atMs: Int64
    public var event: StageEventKind

    public init(atMs: Int64, event: StageEventKind) {
        self.atMs = atMs
        self.event = event
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case atMs, event }

    public init(from decoder: any Decoder) throws {
        try UnknownFieldCheck.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        atMs = try c.decode(Int64.self, forKey: .atMs)
        event = try c.decode(StageEventKind.self, forKey: .event)
    }
}

/// One of several media files of a participant, and when it plays.
public struct StageMediaPart: Codable, Hashable, Sendable {
    public var media: String
    /// Stage time at which this file's first timestamp plays.
    public var mediaOffsetMs: Int64

    public init(media: String, mediaOffsetMs: Int64) {
        self.media = media
        self.mediaOffsetMs = mediaOffsetMs
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case media, mediaOffsetMs }

    public init(from decoder: any Decoder) throws {
        try UnknownFieldCheck.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        media = try c.decode(String.self, forKey: .media)
        mediaOffsetMs = try c.decode(Int64.self, forKey: .mediaOffsetMs)
    }
}

public struct StageParticipantManifest: Codable, Hashable, Sendable {
    public var participantId: String
    public var userId: String
    public var attributes: [String: String]
    /// Media file relative to the stage directory (any container FFmpeg reads, or an IVS
    /// individual participant recording's `media/hls/multivariant.m3u8`). Absent: no media.
    public var media: String?
    /// Stage time at which the media's first timestamp plays. Default: the first publish.
    public var mediaOffsetMs: Int64?
    /// Instead of `media`: several files played in turn, each from its own time (a
    /// participant's individual recordings of one session). In time order.
    public var mediaParts: [StageMediaPart]?
    public var timeline: [StageTimelineEvent]

    public init(participantId: String, userId: String, attributes: [String: String] = [:],
                media: String?, mediaOffsetMs: Int64? = nil, mediaParts: [StageMediaPart]? = nil, timeline: [StageTimelineEvent]) {
        self.participantId = participantId
        self.userId = userId
        self.attributes = attributes
        self.media = media
        self.mediaOffsetMs = mediaOffsetMs
        self.mediaParts = mediaParts
        self.timeline = timeline
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case participantId, userId, attributes, media, mediaOffsetMs, mediaParts, timeline
    }

    public init(from decoder: any Decoder) throws {
        try UnknownFieldCheck.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        participantId = try c.decode(String.self, forKey: .participantId)
        userId = try c.decodeIfPresent(String.self, forKey: .userId) ?? ""
        attributes = try c.decodeIfPresent([String: String].self, forKey: .attributes) ?? [:]
        media = try c.decodeIfPresent(String.self, forKey: .media)
        mediaOffsetMs = try c.decodeIfPresent(Int64.self, forKey: .mediaOffsetMs)
        mediaParts = try c.decodeIfPresent([StageMediaPart].self, forKey: .mediaParts)
        timeline = try c.decode([StageTimelineEvent].self, forKey: .timeline)
    }

    /// Every media file of the participant with the stage time its first timestamp plays.
    public var mediaFiles: [StageMediaPart] {
        if let media { return [StageMediaPart(media: media, mediaOffsetMs: resolvedMediaOffsetMs)] }
        return mediaParts ?? []
    }

    /// The stage time at which media timestamp 0 (the file's first timestamp) plays.
    public var resolvedMediaOffsetMs: Int64 {
        mediaOffsetMs ?? timeline.first(where: { $0.event == .publish })?.atMs ?? 0
    }
}

public struct StageManifest: Codable, Hashable, Sendable {
    /// `arn:aws:ivs:<region>:<account>:stage/<id>`.
    public var stageArn: String
    /// Length of the stage recording. Absent: until the last participant unpublishes, or
    /// their media ends, whichever is later.
    public var durationMs: Int64?
    /// Wall-clock time of stage time 0 (RFC 3339, e.g. "2026-11-26T11:53:37.123Z"), when
    /// known: a stage re-rendered from its recordings. The composite's first segment carries
    /// it as EXT-X-PROGRAM-DATE-TIME, and every picture is shown at its own time, as live
    /// (no early first picture to hide a container's audio priming).
    public var startedAt: String?
    public var participants: [StageParticipantManifest]
    /// A producer's changes on the stage clock, in time order: layouts, audio, attributes
    /// (what a live composition applied, from its recording's `events/directions.json`).
    public var directions: [StageDirection]?

    public init(stageArn: String, durationMs: Int64? = nil, startedAt: String? = nil, participants: [StageParticipantManifest],
                directions: [StageDirection]? = nil) {
        self.stageArn = stageArn
        self.durationMs = durationMs
        self.startedAt = startedAt
        self.participants = participants
        self.directions = directions
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case stageArn, durationMs, startedAt, participants, directions }

    public init(from decoder: any Decoder) throws {
        try UnknownFieldCheck.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        stageArn = try c.decode(String.self, forKey: .stageArn)
        durationMs = try c.decodeIfPresent(Int64.self, forKey: .durationMs)
        startedAt = try c.decodeIfPresent(String.self, forKey: .startedAt)
        participants = try c.decode([StageParticipantManifest].self, forKey: .participants)
        directions = try c.decodeIfPresent([StageDirection].self, forKey: .directions)
    }
}

/// One change a producer made to a composition, at one instant of the stage clock: the
/// same parts as UpdateComposition (a layout with its transition, participants' audio, the
/// overlays) and
/// UpdateParticipant (participants' attributes, by ID). A live composition writes one per
/// change it applied into `events/directions.json`, with the wall-clock time of each.
public struct StageDirection: Codable, Hashable, Sendable {
    /// At most this many in a manifest (and in a composition's record).
    public static let maximumCount = 10_000

    /// Milliseconds from the start of the stage (a live composition's: of the composition).
    public var atMs: Int64
    /// Wall-clock time (ms since 1970), when known: how a re-render from individual
    /// recordings places the change on its own clock.
    public var wallClockMs: Int64?
    public var layout: LayoutConfiguration?
    public var transitionMs: Int?
    public var audio: [String: ParticipantAudio]?
    /// Participants' attributes from now on, by participant ID.
    public var attributes: [String: [String: String]]?
    /// The overlays from now on (a whole description; `{}` removes them). Image files are
    /// relative to the manifest's folder.
    public var overlays: OverlayConfiguration?

    public init(atMs: Int64, wallClockMs: Int64? = nil, layout: LayoutConfiguration? = nil, transitionMs: Int? = nil,
                audio: [String: ParticipantAudio]? = nil, attributes: [String: [String: String]]? = nil,
                overlays: OverlayConfiguration? = nil) {
        self.overlays = overlays
        self.atMs = atMs
        self.wallClockMs = wallClockMs
        self.layout = layout
        self.transitionMs = transitionMs
        self.audio = audio
        self.attributes = attributes
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case atMs, wallClockMs, layout, transitionMs, audio, attributes, overlays }

    public init(from decoder: any Decoder) throws {
        try UnknownFieldCheck.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        atMs = try c.decode(Int64.self, forKey: .atMs)
        wallClockMs = try c.decodeIfPresent(Int64.self, forKey: .wallClockMs)
        layout = try c.decodeIfPresent(LayoutConfiguration.self, forKey: .layout)
        transitionMs = try c.decodeIfPresent(Int.self, forKey: .transitionMs)
        audio = try c.decodeIfPresent([String: ParticipantAudio].self, forKey: .audio)
        attributes = try c.decodeIfPresent([String: [String: String]].self, forKey: .attributes)
        overlays = try c.decodeIfPresent(OverlayConfiguration.self, forKey: .overlays)
    }
}

/// What a live composition writes to its recording's `events/directions.json`: the changes
/// it applied, each at its composition time, and the wall-clock time of composition time 0.
public struct DirectionsRecord: Codable, Hashable, Sendable {
    public var stageArn: String
    /// Wall-clock time (ms since 1970) of composition time 0, when known.
    public var startedAtMs: Int64?
    public var directions: [StageDirection]

    public init(stageArn: String, startedAtMs: Int64?, directions: [StageDirection]) {
        self.stageArn = stageArn
        self.startedAtMs = startedAtMs
        self.directions = directions
    }

    /// Its directions on another stage's clock: one whose time 0 is `stageStartedAtMs` (wall
    /// clock), by each direction's wall-clock time; without one, as they are.
    public func directions(onStageStartedAtMs stageStartedAtMs: Int64?) -> [StageDirection] {
        directions.map { direction in
            var moved = direction
            if let stageStartedAtMs, let wall = direction.wallClockMs { moved.atMs = wall &- stageStartedAtMs }
            return moved
        }
    }
}

/// A participant's publication state at one instant, derived from the timeline.
public struct PublicationState: Hashable, Sendable {
    public var isPublished: Bool
    public var isVideoStopped: Bool
    public var isAudioMuted: Bool
    /// Order in which the participant first published (0 = first), for arrival order.
    public var firstPublishMs: Int64?

    public static let absent = PublicationState(isPublished: false, isVideoStopped: false, isAudioMuted: false, firstPublishMs: nil)
}

extension StageParticipantManifest {
    /// The participant's state at `ms` on the stage clock: every event at or before `ms`
    /// applied in order. Unpublishing resets video-stopped and muted.
    public func state(atMs ms: Int64) -> PublicationState {
        var state = PublicationState.absent
        for entry in timeline where entry.atMs <= ms {
            switch entry.event {
            case .publish:
                state.isPublished = true
                if state.firstPublishMs == nil { state.firstPublishMs = entry.atMs }
            case .unpublish:
                state.isPublished = false
                state.isVideoStopped = false
                state.isAudioMuted = false
            case .videoStopped: state.isVideoStopped = true
            case .videoStarted: state.isVideoStopped = false
            case .audioMuted: state.isAudioMuted = true
            case .audioUnmuted: state.isAudioMuted = false
            }
        }
        return state
    }

    /// Stage times (ms) at which this participant's state changes.
    public var changeTimesMs: [Int64] { timeline.map(\.atMs) }
}

extension StageManifest {
    /// `startedAt` in ms since 1970.
    public var startedAtMs: Int64? { startedAt.flatMap(UTCTimestamp.parseMilliseconds) }

    /// The stage ID: the last path component of the ARN.
    public var stageId: String { String(stageArn.split(separator: "/").last ?? "") }

    /// Time after which no participant publishes any more (the last unpublish), or nil when
    /// someone is still published at the end of their timeline.
    public var lastUnpublishMs: Int64? {
        var last: Int64 = 0
        for participant in participants {
            guard let final = participant.timeline.last else { continue }
            if participant.state(atMs: Int64.max).isPublished { return nil }
            last = max(last, final.atMs)
        }
        return last
    }
}

extension StageTimelineEvent {
    /// `atMs` on the stage clock as a media time (microsecond base).
    public var time: MediaTime { .milliseconds(atMs) }
}

extension StageParticipantManifest {
    /// `resolvedMediaOffsetMs` as a media time: the stage time of the media's first timestamp.
    public var mediaOffset: MediaTime { .milliseconds(resolvedMediaOffsetMs) }
}
