// A recorded stage: `manifest.json` in a directory, next to the participants' media.
// The manifest is the stage's whole story — who was there, with which attributes, what they
// published and when — on one clock that starts at 0 ms.

public import MediaCore

/// What happened to a participant's publication at one instant of the stage clock.
public enum StageEventKind: String, Codable, Sendable, CaseIterable {
    case publish, unpublish, videoStopped, videoStarted, audioMuted, audioUnmuted
}

public struct StageTimelineEvent: Codable, Hashable, Sendable {
    /// Milliseconds from the start of the stage.
    public var atMs: Int64
    public var event: StageEventKind

    public init(atMs: Int64, event: StageEventKind) {
        self.atMs = atMs
        self.event = event
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
    public var timeline: [StageTimelineEvent]

    public init(participantId: String, userId: String, attributes: [String: String] = [:],
                media: String?, mediaOffsetMs: Int64? = nil, timeline: [StageTimelineEvent]) {
        self.participantId = participantId
        self.userId = userId
        self.attributes = attributes
        self.media = media
        self.mediaOffsetMs = mediaOffsetMs
        self.timeline = timeline
    }

    enum CodingKeys: String, CodingKey {
        case participantId, userId, attributes, media, mediaOffsetMs, timeline
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        participantId = try c.decode(String.self, forKey: .participantId)
        userId = try c.decodeIfPresent(String.self, forKey: .userId) ?? ""
        attributes = try c.decodeIfPresent([String: String].self, forKey: .attributes) ?? [:]
        media = try c.decodeIfPresent(String.self, forKey: .media)
        mediaOffsetMs = try c.decodeIfPresent(Int64.self, forKey: .mediaOffsetMs)
        timeline = try c.decode([StageTimelineEvent].self, forKey: .timeline)
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
    public var participants: [StageParticipantManifest]

    public init(stageArn: String, durationMs: Int64? = nil, participants: [StageParticipantManifest]) {
        self.stageArn = stageArn
        self.durationMs = durationMs
        self.participants = participants
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
