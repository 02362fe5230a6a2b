// After a crash: a recording that was being written has an EVENT playlist (possibly one
// segment behind the files) and only recording-started.json. Recovery rebuilds the media
// playlist from the segments present in storage as VOD + ENDLIST (durations from the last
// playlist, or measured from the file for a segment the playlist never listed) and writes
// recording-failed.json, whose recording_ended_at is when the last stored segment was
// written (not the restart, which may come much later; on S3, where the write time is not
// kept, the start plus the recorded duration). Everything goes through the HLS renderers
// and atomic storage, local or S3.
import Foundation
import FFmpeg
import HLS
import Logging
import MediaCore
import Persistence
import Storage

enum RecordingRecovery {
    struct Result: Sendable, Equatable {
        var segments: Int
        var durationMs: Int64
        /// recording_ended_at: the end of the last stored segment.
        var endedAt: Date
    }

    /// `restartedAt` bounds the end time; it is used when no segment tells when it was written.
    static func finalize(_ recording: StoredRecording, storage: any ObjectStorage, stageArn: String, startedAt: Date?,
                         restartedAt: Date, reason: String, logger: Logger) async throws -> Result {
        let local = storage as? LocalDirectoryStorage
        let parts = recording.prefix.split(separator: "/").map(String.init)
        guard parts.count == 4 else { throw StorageError.invalidKey(key: recording.prefix, reason: "not a recording prefix") }
        let layout = RecordingLayout(stageId: parts[0], compositionId: parts[1], destinationId: parts[2])
        let playlistKey = layout.mediaPlaylistKey(rendition: recording.renditionName)
        let renditionPrefix = layout.renditionPrefix(rendition: recording.renditionName) + "/"

        let known = try await playlistText(storage, key: playlistKey).map(parseDurations) ?? [:]
        let keys = try await storage.list(prefix: renditionPrefix)
        let segmentFiles = keys.compactMap { key -> (Int, String)? in
            let name = String(key.dropFirst(renditionPrefix.count))
            guard name.hasSuffix(".ts"), !name.contains("/"), let number = Int(name.dropLast(3).filter(\.isNumber)) else { return nil }
            return (number, name)
        }.sorted { $0.0 < $1.0 }

        var playlist = MediaPlaylist(targetDurationSeconds: recording.targetSegmentDurationSeconds, playlistType: .vod)
        for (_, name) in segmentFiles {
            if let duration = known[name] {
                playlist.segments.append(HLSSegment(uri: name, duration: duration))
            } else if let micro = await measureDuration(storage: storage, key: renditionPrefix + name), micro > 0 {
                playlist.segments.append(HLSSegment(uri: name, duration: .microseconds(micro)))
            } else {
                logger.warning("segment cannot be read; left out of the playlist", metadata: ["segment": "\(name)"])
            }
        }
        playlist = playlist.finished()
        // A segment is stored when it ends: the last one's write time is the recording's end.
        let lastWritten = playlist.segments.last.flatMap { segment in
            local.flatMap {
                (try? FileManager.default.attributesOfItem(atPath: $0.root.appendingPathComponent(renditionPrefix + segment.uri).path))?[
                    .modificationDate] as? Date
            }
        }
        let fromDuration = startedAt.map { $0.addingTimeInterval(TimeInterval(playlist.durationMs) / 1000) }
        let endedAt = min(lastWritten ?? fromDuration ?? restartedAt, restartedAt)
        try await storage.put(Data(playlist.render().utf8), key: playlistKey)

        let resolution = VideoResolution(width: recording.width, height: recording.height)
        let metadata = RecordingMetadata(stageArn: stageArn, status: .recordingStarted, startedAt: startedAt,
                                         renditions: [.init(path: recording.renditionName, resolution: resolution)])
            .ended(at: endedAt, durationMs: playlist.durationMs, failure: reason)
        try await storage.put(metadata.jsonData(), key: layout.metadataKey(for: metadata.status))
        return Result(segments: playlist.segments.count, durationMs: playlist.durationMs, endedAt: endedAt)
    }

    /// The stored playlist, nil when there is none; other failures are thrown.
    static func playlistText(_ storage: any ObjectStorage, key: String) async throws(StorageError) -> String? {
        do throws(StorageError) {
            return String(decoding: try await storage.get(key: key), as: UTF8.self)
        } catch {
            if case .notFound = error { return nil }
            throw error
        }
    }

    /// Segment URI → duration from an m3u8 (`#EXTINF:2.000,` then the URI line).
    static func parseDurations(_ text: String) -> [String: MediaTime] {
        var result: [String: MediaTime] = [:]
        var pending: MediaTime?
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#EXTINF:") {
                let value = line.dropFirst("#EXTINF:".count).split(separator: ",", maxSplits: 1).first.map(String.init) ?? ""
                pending = parseDecimalSeconds(value)
            } else if !line.hasPrefix("#"), !line.isEmpty, let duration = pending {
                result[line] = duration
                pending = nil
            }
        }
        return result
    }

    /// "2.000" → 2 s in microseconds, without going through floating point.
    static func parseDecimalSeconds(_ text: String) -> MediaTime? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = Int64(parts[0]) else { return nil }
        var micro = whole * 1_000_000
        if parts.count == 2 {
            let digits = String(parts[1].prefix(6))
            guard digits.allSatisfy(\.isNumber) else { return nil }
            let padded = digits + String(repeating: "0", count: 6 - digits.count)
            micro += Int64(padded) ?? 0
        }
        return .microseconds(micro)
    }

    /// A segment's duration, read from the file (fetched to a temporary file off S3).
    static func measureDuration(storage: any ObjectStorage, key: String) async -> Int64? {
        if let local = storage as? LocalDirectoryStorage {
            return measureDuration(path: local.root.appendingPathComponent(key).path)
        }
        guard let data = try? await storage.get(key: key) else { return nil }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("recovery-\(UUID().uuidString).ts")
        defer { try? FileManager.default.removeItem(at: file) }
        guard (try? data.write(to: file)) != nil else { return nil }
        return measureDuration(path: file.path)
    }

    static func measureDuration(path: String) -> Int64? {
        guard let demuxer = try? Demuxer(url: path) else { return nil }
        return demuxer.durationMicroseconds
    }
}

/// The same for an individual participant recording (fMP4 segments `1.mp4`, `2.mp4`, ... after
/// `init.mp4`, under `<prefix>/media/hls/high/`): the playlist rebuilt as VOD from the stored
/// segments (durations from the last playlist, or measured with the init section for one it
/// never listed) and recording-failed.json with what was stored.
enum ParticipantRecordingRecovery {
    static func finalize(prefix: String, storage: any ObjectStorage, stageArn: String, restartedAt: Date, reason: String,
                         logger: Logger) async throws -> RecordingRecovery.Result {
        let parts = prefix.split(separator: "/").map(String.init)
        guard parts.count == 4 else { throw StorageError.invalidKey(key: prefix, reason: "not a participant recording prefix") }
        let startedAt = parseTimestamp(parts[3])
        let layout = ParticipantRecordingLayout(stageId: parts[0], sessionId: parts[1], participantId: parts[2],
                                                startedAt: startedAt ?? restartedAt)
        let renditionPrefix = layout.renditionPrefix + "/"
        // What the playlist said before the crash (discontinuities, initialization sections,
        // dates: what a re-render places the media by) is kept as written; stored segments it
        // did not list yet are measured and appended.
        let written: MediaPlaylist?
        if let text = try await RecordingRecovery.playlistText(storage, key: layout.mediaPlaylistKey) {
            do { written = try MediaPlaylist.parse(text) } catch {
                logger.warning("the stored playlist cannot be read; rebuilt from the segments", metadata: ["reason": "\(error)"])
                written = nil
            }
        } else {
            written = nil
        }
        let known = Dictionary(written?.segments.map { ($0.uri, $0) } ?? [], uniquingKeysWith: { first, _ in first })
        let keys = try await storage.list(prefix: renditionPrefix)
        let segments = keys.compactMap { key -> (Int, String)? in
            let name = String(key.dropFirst(renditionPrefix.count))
            guard name.hasSuffix(".mp4"), !name.hasPrefix("init"), let number = Int(name.dropLast(4)) else { return nil }
            return (number, name)
        }.sorted { $0.0 < $1.0 }
        // The configured target is not stored; EXT-X-TARGETDURATION follows the longest segment.
        var playlist = MediaPlaylist(targetDurationSeconds: 1, mediaSequence: 1, playlistType: .vod,
                                     initSegmentURI: written?.initSegmentURI ?? (keys.contains(renditionPrefix + "init.mp4") ? "init.mp4" : nil))
        for (_, name) in segments {
            if let segment = known[name] {
                playlist.segments.append(segment)
                continue
            }
            // Not listed yet: it belongs to the last initialization section listed.
            let initName = playlist.segments.last?.initSegmentURI ?? playlist.initSegmentURI ?? "init.mp4"
            if let micro = await measure(storage: storage, initKey: renditionPrefix + initName, key: renditionPrefix + name), micro > 0 {
                playlist.segments.append(HLSSegment(uri: name, duration: .microseconds(micro), initSegmentURI: initName))
            } else {
                logger.warning("segment cannot be read; left out of the playlist", metadata: ["segment": "\(name)"])
            }
        }
        playlist = playlist.finished()
        try await storage.put(Data(playlist.render().utf8), key: layout.mediaPlaylistKey)
        let endedAt = min(startedAt.map { $0.addingTimeInterval(TimeInterval(playlist.durationMs) / 1000) } ?? restartedAt, restartedAt)
        let metadata = layout.metadata(stageArn: stageArn, status: .recordingStarted, hls: true, sequentialThumbnails: false,
                                       latestThumbnail: false)
            .ended(at: endedAt, durationMs: playlist.durationMs, failure: reason)
        try await storage.put(metadata.jsonData(), key: layout.metadataKey(for: metadata.status))
        return RecordingRecovery.Result(segments: playlist.segments.count, durationMs: playlist.durationMs, endedAt: endedAt)
    }

    /// "2024-01-01T12-00-55Z" back to a date.
    static func parseTimestamp(_ text: String) -> Date? {
        let parts = text.dropLast().split(separator: "T")
        guard text.hasSuffix("Z"), parts.count == 2 else { return nil }
        let date = parts[0].split(separator: "-").compactMap { Int($0) }, time = parts[1].split(separator: "-").compactMap { Int($0) }
        guard date.count == 3, time.count == 3 else { return nil }
        var components = DateComponents()
        (components.year, components.month, components.day) = (date[0], date[1], date[2])
        (components.hour, components.minute, components.second) = (time[0], time[1], time[2])
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.date(from: components)
    }

    /// A fragment's duration: the init section and the fragment as one file, demuxed.
    static func measure(storage: any ObjectStorage, initKey: String, key: String) async -> Int64? {
        guard let header = try? await storage.get(key: initKey), let fragment = try? await storage.get(key: key) else { return nil }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("recovery-\(UUID().uuidString).mp4")
        defer { try? FileManager.default.removeItem(at: file) }
        guard (try? (header + fragment).write(to: file)) != nil else { return nil }
        // A fragment keeps its decode times (it may start seconds in), and MP4's duration runs
        // from time 0: its own length is from its start.
        guard let demuxer = try? Demuxer(url: file.path), let duration = demuxer.durationMicroseconds else { return nil }
        return duration - max(0, min(demuxer.startTimeMicroseconds ?? 0, duration))
    }
}
