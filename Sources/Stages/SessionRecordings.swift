// A stage session's individual participant recordings read back as a recorded stage, so it
// can be composed again (`stage-compositor compose --stage <session prefix>`).
//
//   <stageId>/<sessionId>/<participantId>/<timestamp>/events/recording-*.json
//                                                    /media/hls/multivariant.m3u8, <rendition>/playlist.m3u8
//
// Each recording's playlist says when its media happened: EXT-X-PROGRAM-DATE-TIME on its first
// segment and after every discontinuity (a reconnect), and exact EXTINF durations. A run of
// segments between discontinuities is one stretch of publishing: published from its date
// for the sum of its durations. The media's own timestamps keep the gaps (fMP4 decode times
// on the stage clock), so one file per recording plays at the right times. Pure: the files
// are given by a listing and a reader.
public import Foundation
import HLS
import MediaCore

public struct SessionRecordings: Sendable {
    /// One participant recording found under the session.
    public struct Recording: Sendable, Equatable {
        public var participantId: String
        /// `<participantId>/<timestamp>`, relative to the session directory.
        public var directory: String
        /// The multivariant playlist, relative to the session directory.
        public var media: String
        /// Publishing stretches in wall-clock ms since 1970: [start, end).
        public var stretches: [(startMs: Int64, endMs: Int64)]
        public var status: String

        public static func == (a: Recording, b: Recording) -> Bool {
            a.participantId == b.participantId && a.directory == b.directory && a.media == b.media && a.status == b.status
                && a.stretches.elementsEqual(b.stretches) { $0.startMs == $1.startMs && $0.endMs == $1.endMs }
        }
    }

    public var stageArn: String
    public var recordings: [Recording]
    /// What could not be used, or only approximately (for the CLI to print).
    public var notes: [String]

    /// Reads the recordings of the session whose directory holds `files` (paths relative to
    /// it). `read` returns a file's bytes. `source` names the session in errors.
    public static func read(files: [String], source: String,
                            read: (String) throws -> Data) throws(StageError) -> SessionRecordings {
        var notes: [String] = []
        var stageArn: String?
        var recordings: [Recording] = []
        // <participantId>/<timestamp>/events/recording-<status>.json
        var directories: [String: Set<String>] = [:]
        for file in files {
            let parts = file.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 4, parts[2] == "events", parts[3].hasPrefix("recording-"), parts[3].hasSuffix(".json") else { continue }
            directories["\(parts[0])/\(parts[1])", default: []].insert(String(parts[3]))
        }
        guard !directories.isEmpty else {
            throw StageError(file: source, message: "no individual participant recordings here "
                             + "(expected <participantId>/<timestamp>/events/recording-started.json under a stage session prefix)")
        }
        for directory in directories.keys.sorted() {
            let events = directories[directory] ?? []
            // The final word: ended, else failed (crash recovery), else still started.
            guard let eventFile = ["recording-ended.json", "recording-failed.json", "recording-started.json"].first(where: events.contains)
            else { continue }
            let metadataPath = "\(directory)/events/\(eventFile)"
            let metadata: RecordingMetadataFields
            do {
                metadata = try JSONDecoder().decode(RecordingMetadataFields.self, from: try read(metadataPath))
            } catch {
                throw StageError(file: "\(source)/\(metadataPath)", message: "unreadable recording metadata: \(error)")
            }
            if let arn = metadata.stageArn {
                if let stageArn, stageArn != arn {
                    throw StageError(file: "\(source)/\(metadataPath)", field: "stage_arn",
                                     message: "\(arn) is another stage than \(stageArn): one session at a time")
                }
                stageArn = arn
            }
            let participantId = metadata.participantId ?? String(directory.split(separator: "/")[0])
            guard let hls = metadata.media?.hls, let rendition = hls.renditions?.first else {
                notes.append("\(directory): no HLS media (mediaTypes NONE): left out")
                continue
            }
            let hlsPath = hls.path ?? "media/hls"
            let playlistPath = "\(directory)/\(hlsPath)/\(rendition.path)/\(rendition.playlist ?? "playlist.m3u8")"
            let playlist: MediaPlaylist
            do {
                guard let text = String(data: try read(playlistPath), encoding: .utf8) else {
                    throw StageError(file: "\(source)/\(playlistPath)", message: "not UTF-8")
                }
                playlist = try MediaPlaylist.parse(text)
            } catch let error as StageError {
                throw error
            } catch {
                throw StageError(file: "\(source)/\(playlistPath)", message: "\(error)")
            }
            guard !playlist.segments.isEmpty else {
                notes.append("\(directory): no segments stored: left out")
                continue
            }
            let startedAt = metadata.recordingStartedAt.flatMap(UTCTimestamp.parseMilliseconds)
            var stretches: [(startMs: Int64, endMs: Int64)] = []
            var undated = 0
            for segment in playlist.segments {
                let durationMs = segment.duration.microsecondsValue / 1000
                if stretches.isEmpty || segment.discontinuity {
                    let start: Int64
                    if let date = segment.programDateTimeMs {
                        start = date
                    } else {
                        // No date (a recording made before they were written): right after the
                        // previous stretch, or at the recording's start (whole seconds).
                        undated += 1
                        guard let fallback = stretches.last?.endMs ?? startedAt else {
                            throw StageError(file: "\(source)/\(playlistPath)",
                                             message: "no EXT-X-PROGRAM-DATE-TIME and no recording_started_at: cannot place it in time")
                        }
                        start = fallback
                    }
                    stretches.append((start, start + durationMs))
                } else {
                    stretches[stretches.count - 1].endMs += durationMs
                }
            }
            if undated > 0 {
                notes.append("\(directory): \(undated) stretch(es) without EXT-X-PROGRAM-DATE-TIME placed approximately")
            }
            recordings.append(Recording(participantId: participantId, directory: directory,
                                        media: "\(directory)/\(hlsPath)/\(hls.playlist ?? "multivariant.m3u8")",
                                        stretches: stretches, status: metadata.recordingStatus ?? "RECORDING_STARTED"))
        }
        guard !recordings.isEmpty else {
            throw StageError(file: source, message: "no recording with media to compose: " + notes.joined(separator: "; "))
        }
        return SessionRecordings(stageArn: stageArn ?? "arn:aws:ivs:us-east-1:000000000000:stage/recorded",
                                 recordings: recordings, notes: notes)
    }

    /// The session as a recorded stage: time 0 is the first recording's first media; each
    /// participant is published over its stretches, its recordings played in turn.
    public var manifest: StageManifest {
        let zero = recordings.compactMap { $0.stretches.first?.startMs }.min() ?? 0
        var byParticipant: [String: [Recording]] = [:]
        for recording in recordings { byParticipant[recording.participantId, default: []].append(recording) }
        var participants: [StageParticipantManifest] = []
        var end: Int64 = 0
        for (participantId, list) in byParticipant {
            let ordered = list.sorted { ($0.stretches.first?.startMs ?? 0) < ($1.stretches.first?.startMs ?? 0) }
            var timeline: [StageTimelineEvent] = []
            var parts: [StageMediaPart] = []
            for recording in ordered {
                guard let first = recording.stretches.first else { continue }
                parts.append(StageMediaPart(media: recording.media, mediaOffsetMs: first.startMs - zero))
                for stretch in recording.stretches {
                    // Stretches never overlap on the timeline; a clock step back is clamped.
                    let start = max(stretch.startMs - zero, timeline.last?.atMs ?? 0)
                    let stop = max(stretch.endMs - zero, start)
                    timeline.append(StageTimelineEvent(atMs: start, event: .publish))
                    timeline.append(StageTimelineEvent(atMs: stop, event: .unpublish))
                    end = max(end, stop)
                }
            }
            participants.append(StageParticipantManifest(participantId: participantId, userId: "", media: nil, mediaParts: parts,
                                                         timeline: timeline))
        }
        participants.sort { ($0.timeline.first?.atMs ?? 0, $0.participantId) < ($1.timeline.first?.atMs ?? 0, $1.participantId) }
        return StageManifest(stageArn: stageArn, durationMs: max(end, 1), startedAt: UTCTimestamp.format(millisecondsSince1970: zero),
                             participants: participants)
    }
}

/// The fields of recording-*.json a re-render reads (the seed's "JSON Metadata Files").
struct RecordingMetadataFields: Decodable {
    struct Rendition: Decodable {
        var path: String
        var playlist: String?
    }

    struct HLS: Decodable {
        var path: String?
        var playlist: String?
        var renditions: [Rendition]?
    }

    struct Media: Decodable {
        var hls: HLS?
    }

    var stageArn: String?
    var participantId: String?
    var recordingStartedAt: String?
    var recordingStatus: String?
    var media: Media?

    enum CodingKeys: String, CodingKey {
        case stageArn = "stage_arn", participantId = "participant_id", recordingStartedAt = "recording_started_at"
        case recordingStatus = "recording_status", media
    }
}
