import Layout
import MediaCore

/// Semantic checks on a decoded manifest (the decoder has already checked types, event
/// names and unknown fields). Each failure names the manifest file and the field.
///
/// Rules:
/// - `stageArn` is a stage ARN; `durationMs`, when present, is > 0.
/// - At most `maximumParticipants` (12, the SPEC's publishers-per-stage quota).
/// - An empty `participants` list is allowed (a stage nobody publishes to: the composition
///   shows the background and the 60-second idle rule applies), but then `durationMs` is
///   required, or the stage would have no length.
/// - `participantId` non-empty and unique.
/// - `media`, when present: a non-empty relative path that stays inside the stage directory
///   (no leading "/", no "~", no backslash, no NUL, no ".." climbing out). Checked lexically;
///   a symlink the stage's author placed in the directory is followed.
/// - Timeline: `atMs` >= 0, in non-decreasing order, not after `durationMs`, and each event
///   valid in the state it meets: `publish` only while unpublished; the others only while
///   published; `videoStopped`/`videoStarted` and `audioMuted`/`audioUnmuted` alternate.
/// - `mediaOffsetMs` may be negative: the media started before the stage clock (its head is
///   skipped).
enum StageManifestValidator {
    static let stageArnPattern = #"^arn:aws:ivs:[a-z0-9-]+:[0-9]+:stage/[a-zA-Z0-9-]+$"#
    static let maximumParticipants = 12
    /// Times in a manifest (durationMs, atMs, |mediaOffsetMs|) are at most a week: far beyond
    /// any stage, and small enough that every conversion to microseconds stays in Int64.
    public static let maximumTimeMs: Int64 = 7 * 86_400_000

    static func validate(_ manifest: StageManifest, file: String) throws(StageError) {
        if manifest.stageArn.wholeMatch(of: try! Regex(stageArnPattern)) == nil {
            throw StageError(file: file, field: "stageArn", message: "'\(manifest.stageArn)' is not a stage ARN (arn:aws:ivs:REGION:ACCOUNT:stage/ID)")
        }
        if let duration = manifest.durationMs, duration <= 0 {
            throw StageError(file: file, field: "durationMs", message: "must be greater than 0")
        }
        if let duration = manifest.durationMs, duration > maximumTimeMs {
            throw StageError(file: file, field: "durationMs", message: "\(duration) is more than a week (\(maximumTimeMs) ms)")
        }
        if manifest.participants.count > maximumParticipants {
            throw StageError(file: file, field: "participants",
                             message: "\(manifest.participants.count) participants; a stage has at most \(maximumParticipants) publishers")
        }
        if let startedAt = manifest.startedAt, manifest.startedAtMs == nil {
            throw StageError(file: file, field: "startedAt", message: "'\(startedAt)' is not an RFC 3339 date-time (2026-11-26T11:53:37.123Z)")
        }
        if manifest.participants.isEmpty && manifest.durationMs == nil {
            throw StageError(file: file, field: "durationMs", message: "required when the stage has no participants")
        }
        var seen = Set<String>()
        for (index, participant) in manifest.participants.enumerated() {
            let prefix = "participants[\(index)]"
            if participant.participantId.isEmpty {
                throw StageError(file: file, field: "\(prefix).participantId", message: "must not be empty")
            }
            if !seen.insert(participant.participantId).inserted {
                throw StageError(file: file, field: "\(prefix).participantId", message: "duplicate participantId '\(participant.participantId)'")
            }
            if let media = participant.media, let problem = mediaPathProblem(media) {
                throw StageError(file: file, field: "\(prefix).media", message: "'\(media)' \(problem)")
            }
            if let offset = participant.mediaOffsetMs, offset > maximumTimeMs || offset < -maximumTimeMs {
                throw StageError(file: file, field: "\(prefix).mediaOffsetMs", message: "\(offset) is more than a week either way")
            }
            if let parts = participant.mediaParts {
                if participant.media != nil || participant.mediaOffsetMs != nil {
                    throw StageError(file: file, field: "\(prefix).mediaParts", message: "either media (with mediaOffsetMs) or mediaParts, not both")
                }
                if parts.isEmpty { throw StageError(file: file, field: "\(prefix).mediaParts", message: "must not be empty") }
                var previous = Int64.min
                for (partIndex, part) in parts.enumerated() {
                    let field = "\(prefix).mediaParts[\(partIndex)]"
                    if let problem = mediaPathProblem(part.media) {
                        throw StageError(file: file, field: "\(field).media", message: "'\(part.media)' \(problem)")
                    }
                    if part.mediaOffsetMs > maximumTimeMs || part.mediaOffsetMs < -maximumTimeMs {
                        throw StageError(file: file, field: "\(field).mediaOffsetMs", message: "\(part.mediaOffsetMs) is more than a week either way")
                    }
                    if part.mediaOffsetMs <= previous {
                        throw StageError(file: file, field: "\(field).mediaOffsetMs", message: "parts must be in time order (\(part.mediaOffsetMs) after \(previous))")
                    }
                    previous = part.mediaOffsetMs
                }
            }
            try validateTimeline(participant.timeline, prefix: prefix, durationMs: manifest.durationMs, file: file)
        }
        try validateDirections(manifest.directions ?? [], file: file)
    }

    static var maximumDirections: Int { StageDirection.maximumCount }

    /// Directions: in time order within a week, each layout and overlay description as
    /// StartComposition checks it, transitions 0...2000 ms, gains 0...2, attributes within
    /// IVS's 1 KB. (Overlay files are read when the stage is composed.)
    static func validateDirections(_ directions: [StageDirection], file: String) throws(StageError) {
        if directions.count > maximumDirections {
            throw StageError(file: file, field: "directions", message: "\(directions.count) directions; at most \(maximumDirections)")
        }
        var previous = Int64.min
        for (index, direction) in directions.enumerated() {
            let prefix = "directions[\(index)]"
            if direction.atMs < 0 || direction.atMs > maximumTimeMs {
                throw StageError(file: file, field: "\(prefix).atMs", message: "\(direction.atMs) is not between 0 and a week (\(maximumTimeMs) ms)")
            }
            if direction.atMs < previous {
                throw StageError(file: file, field: "\(prefix).atMs", message: "directions must be in time order (\(direction.atMs) after \(previous))")
            }
            previous = direction.atMs
            do throws(LayoutValidationError) {
                try direction.layout?.validate(prefix: "\(prefix).layout")
                try LayoutConfiguration.validateTransition(direction.transitionMs, field: "\(prefix).transitionMs")
                try direction.overlays?.validate(prefix: "\(prefix).overlays")
            } catch {
                if case .invalidField(let field, let reason) = error { throw StageError(file: file, field: field, message: reason) }
                throw StageError(file: file, field: prefix, message: error.description)
            }
            for (id, audio) in direction.audio ?? [:] {
                if let problem = audio.gainProblem { throw StageError(file: file, field: "\(prefix).audio.\(id).gain", message: problem) }
            }
            for (id, attributes) in direction.attributes ?? [:] where ParticipantAttributes.byteCount(attributes) > ParticipantAttributes.maximumBytes {
                throw StageError(file: file, field: "\(prefix).attributes.\(id)", message: "keys and values may total at most "
                                 + "\(ParticipantAttributes.maximumBytes) bytes (got \(ParticipantAttributes.byteCount(attributes)))")
            }
        }
    }

    static func validateTimeline(_ timeline: [StageTimelineEvent], prefix: String, durationMs: Int64?, file: String) throws(StageError) {
        var previous: Int64 = 0
        var published = false, videoStopped = false, audioMuted = false
        for (eventIndex, event) in timeline.enumerated() {
            let atField = "\(prefix).timeline[\(eventIndex)].atMs"
            if event.atMs < 0 { throw StageError(file: file, field: atField, message: "must be >= 0") }
            if event.atMs > maximumTimeMs { throw StageError(file: file, field: atField, message: "\(event.atMs) is more than a week") }
            if event.atMs < previous {
                throw StageError(file: file, field: atField, message: "events must be in time order (\(event.atMs) < \(previous))")
            }
            if let durationMs, event.atMs > durationMs {
                throw StageError(file: file, field: atField, message: "\(event.atMs) is after the end of the stage (durationMs \(durationMs))")
            }
            previous = event.atMs

            let problem: String?
            switch event.event {
            case .publish:
                problem = published ? "already published" : nil
                published = true
            case .unpublish:
                problem = published ? nil : "not published"
                published = false
                videoStopped = false
                audioMuted = false
            case .videoStopped:
                problem = !published ? "not published" : videoStopped ? "video already stopped" : nil
                videoStopped = true
            case .videoStarted:
                problem = !published ? "not published" : !videoStopped ? "video was not stopped" : nil
                videoStopped = false
            case .audioMuted:
                problem = !published ? "not published" : audioMuted ? "audio already muted" : nil
                audioMuted = true
            case .audioUnmuted:
                problem = !published ? "not published" : !audioMuted ? "audio was not muted" : nil
                audioMuted = false
            }
            if let problem {
                throw StageError(file: file, field: "\(prefix).timeline[\(eventIndex)].event",
                                 message: "'\(event.event.rawValue)' at \(event.atMs) ms: \(problem)")
            }
        }
    }

    /// Why `path` is not a safe media path relative to the stage directory, or nil.
    static func mediaPathProblem(_ path: String) -> String? {
        if path.isEmpty { return "is empty" }
        if path.hasPrefix("/") { return "is an absolute path; use a path relative to the stage directory" }
        if path.hasPrefix("~") { return "starts with '~'; use a path relative to the stage directory" }
        if path.contains("\\") { return "contains a backslash; use '/'" }
        if path.unicodeScalars.contains(where: { $0.value < 0x20 }) { return "contains a control character" }
        if path.hasSuffix("/") { return "names a directory" }
        var depth = 0
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch component {
            case ".": continue
            case "..":
                depth -= 1
                if depth < 0 { return "leaves the stage directory" }
            default: depth += 1
            }
        }
        return depth == 0 ? "names the stage directory itself" : nil
    }
}
