// Where the playlist is written: the S3 destination's HLS recording. Packets are cut into
// MPEG-TS segments on the IDR frames the encoder places every segment duration; after each
// segment the media playlist is re-rendered (EVENT) and uploaded after it. On finish the
// last segment is cut, the playlist becomes VOD + ENDLIST, and recording-ended.json (or
// recording-failed.json) is written — also when the composition failed midway.

public import Foundation
public import FFmpeg
public import HLS
public import MediaCore
public import Pipeline
public import Logging

/// CompositionThumbnailConfiguration: JPEGs of the composite every `intervalSeconds`.
public struct ThumbnailPlan: Sendable, Equatable {
    public var intervalSeconds: Int
    /// `media/thumbnails/<w>x<h>/<n>.jpg`, numbered from 1.
    public var sequential: Bool
    /// `media/latest_thumbnail/<w>x<h>/thumb.jpg`, overwritten each time.
    public var latest: Bool

    public init(intervalSeconds: Int = 60, sequential: Bool = true, latest: Bool = false) {
        self.intervalSeconds = intervalSeconds
        self.sequential = sequential
        self.latest = latest
    }
}

public struct HLSRecordingConfiguration: Sendable {
    public var layout: RecordingLayout
    public var thumbnails: ThumbnailPlan?
    public var stageArn: String
    public var encoderConfigurationId: String
    public var targetSegmentDurationSeconds: Int
    public var video: VideoEncoderSettings
    public var audioBitrate: Int

    public init(layout: RecordingLayout, stageArn: String, encoderConfigurationId: String,
                targetSegmentDurationSeconds: Int, video: VideoEncoderSettings, audioBitrate: Int,
                thumbnails: ThumbnailPlan? = nil) {
        self.layout = layout
        self.thumbnails = thumbnails
        self.stageArn = stageArn
        self.encoderConfigurationId = encoderConfigurationId
        self.targetSegmentDurationSeconds = targetSegmentDurationSeconds
        self.video = video
        self.audioBitrate = audioBitrate
    }

    /// `720p30-<encoderConfigurationId>`.
    public var renditionName: String {
        let fps = Int(video.frameRate.rescale(1, to: Rational(1, 1)))
        return RecordingLayout.renditionName(height: video.height, framesPerSecond: fps, encoderConfigurationId: encoderConfigurationId)
    }
}

public final class HLSRecordingSink: PacketSink {
    public let name: String
    private let configuration: HLSRecordingConfiguration
    private let uploads: any RecordingUploads
    private let now: () -> Date
    private let logger: Logger
    private var muxer: Muxer?
    private var videoTimeBase = Rational(1, 30)
    private var audioTimeBase = Rational(1, 48_000)
    private var videoStream = 0
    private var audioStream = 1
    private var playlist: MediaPlaylist
    private var metadata: RecordingMetadata
    private var segmentStart: Int64?
    private var lastVideoPTS: Int64?
    private var segmentBytes = 0
    // Audio waits here until a video packet at or after its time arrives (interleaving).
    private var audioQueue: [Packet] = []
    private var packetPool: [Packet] = []
    private var finished = false
    private var thumbnailCount = 0
    /// Wall-clock ms of output time 0: the first segment's EXT-X-PROGRAM-DATE-TIME.
    private var wallClockOriginMs: Int64?

    /// The S3 destination it records (its events are that destination's).
    public var destinationId: String? { configuration.layout.destinationId }

    /// Bytes stored so far (segments, playlists, metadata, thumbnails): the output-bitrate metric.
    public var bytesUploaded: Int64 { uploads.bytesWritten }

    public init(name: String, configuration: HLSRecordingConfiguration, uploads: any RecordingUploads,
                now: @escaping () -> Date = Date.init, logger: Logger) {
        self.name = name
        self.configuration = configuration
        self.uploads = uploads
        self.now = now
        self.logger = logger
        playlist = MediaPlaylist(targetDurationSeconds: configuration.targetSegmentDurationSeconds, playlistType: .event)
        let resolution = VideoResolution(width: configuration.video.width, height: configuration.video.height)
        metadata = RecordingMetadata(
            stageArn: configuration.stageArn, status: .recordingStarted, startedAt: nil,
            renditions: [.init(path: configuration.renditionName, resolution: resolution)],
            thumbnails: configuration.thumbnails?.sequential == true ? .sequential([resolution]) : nil,
            latestThumbnail: configuration.thumbnails?.latest == true ? .latest([resolution]) : nil)
    }

    public var mediaPlaylistKey: String { configuration.layout.mediaPlaylistKey(rendition: configuration.renditionName) }
    public var multivariantPlaylistKey: String { configuration.layout.multivariantPlaylistKey }

    /// Total recorded duration so far (sum of closed segments).
    public var recordedDurationMs: Int64 { playlist.durationMs }

    public func anchor(wallClockOriginMs: Int64) { self.wallClockOriginMs = wallClockOriginMs }

    public func start(video: Encoder, audio: Encoder) throws(PipelineError) {
        do {
            let muxer = try Muxer(format: "mpegts", interleaved: false)
            videoStream = try muxer.addStream(like: video)
            audioStream = try muxer.addStream(like: audio)
            try muxer.writeHeader()
            self.muxer = muxer
        } catch {
            throw .output("\(name): \(error)")
        }
        videoTimeBase = video.timeBase
        audioTimeBase = audio.timeBase
        metadata.startedAt = now()
        upload(metadata.jsonData(), key: configuration.layout.metadataKey(for: .recordingStarted))
        let variant = MultivariantPlaylist.Variant(
            bandwidth: (configuration.video.bitrate + configuration.audioBitrate) * 11 / 10,
            averageBandwidth: configuration.video.bitrate + configuration.audioBitrate,
            resolution: VideoResolution(width: configuration.video.width, height: configuration.video.height),
            frameRate: configuration.video.frameRate,
            codecs: "\(video.rfc6381Codec),\(audio.rfc6381Codec)",
            uri: "\(configuration.renditionName)/\(RecordingLayout.mediaPlaylistName)")
        upload(Data(MultivariantPlaylist(variants: [variant]).render().utf8), key: multivariantPlaylistKey)
    }

    /// Thumbnails: the composite itself (rendition size) at tick 0 and every interval.
    public func composed(_ canvas: Frame, tick: Int64) throws(PipelineError) {
        guard let plan = configuration.thumbnails, plan.sequential || plan.latest, !finished else { return }
        let interval = configuration.video.frameRate.rescale(Int64(plan.intervalSeconds), to: Rational(1, 1))
        guard tick % max(interval, 1) == 0 else { return }
        let resolution = VideoResolution(width: configuration.video.width, height: configuration.video.height)
        let image: [UInt8]
        do {
            // A fresh encoder per image: thumbnails are seconds apart and MJPEG opens cheaply.
            image = try JPEGEncoder(width: resolution.width, height: resolution.height).encode(canvas)
        } catch {
            logger.warning("thumbnail failed", metadata: ["error": "\(error)"])
            return
        }
        thumbnailCount += 1
        if plan.sequential { upload(Data(image), key: configuration.layout.thumbnailKey(resolution: resolution, number: thumbnailCount)) }
        if plan.latest { upload(Data(image), key: configuration.layout.latestThumbnailKey(resolution: resolution)) }
    }

    public func write(_ packet: Packet, media: MediaType) throws(PipelineError) {
        if let failure = uploads.firstFailure { throw .output("\(name): \(failure)") }
        guard let muxer, !finished else { return }
        do {
            if media == .audio {
                let queued = packetPool.popLast() ?? Packet()
                packet.reference(into: queued)
                audioQueue.append(queued)
                return
            }
            if packet.isKeyframe, segmentStart != nil, lastVideoPTS != nil {
                try writeAudio(before: packet.pts, muxer: muxer)
                try cutSegment(endingAt: packet.pts, muxer: muxer)
            }
            if segmentStart == nil { segmentStart = packet.pts }
            try writeAudio(before: packet.pts, muxer: muxer)
            try muxer.write(packet, stream: videoStream)
            lastVideoPTS = packet.pts
        } catch {
            throw .output("\(name): \(error)")
        }
    }

    /// The changes the composition applied, as `events/directions.json` (written at the end
    /// when there are any).
    public var directions: (() -> Data?)?

    public func finish(failure: String?) throws(PipelineError) {
        guard !finished else { return }
        finished = true
        var problem = failure
        if let data = directions?() { upload(data, key: configuration.layout.directionsKey) }
        if let muxer {
            do {
                try writeAudio(before: nil, muxer: muxer)
                if let last = lastVideoPTS { try cutSegment(endingAt: last + 1, muxer: muxer) }
                _ = try muxer.finish()
            } catch {
                problem = problem ?? "\(error)"
            }
        }
        // The final playlist names only segments that were stored: a write that failed (a
        // full disk) ends it before that segment, so what is left plays to its end.
        let failed = uploads.failedKeysWhenSettled()
        if !failed.isEmpty {
            let keys = playlist.segments.indices.map { configuration.layout.segmentKey(rendition: configuration.renditionName, sequence: $0) }
            if let first = keys.firstIndex(where: failed.contains) {
                playlist.segments.removeSubrange(first...)
            }
            problem = problem ?? uploads.firstFailure
        }
        playlist = playlist.finished()
        upload(Data(playlist.render().utf8), key: mediaPlaylistKey)
        let final = metadata.ended(at: now(), durationMs: playlist.durationMs, failure: problem)
        upload(final.jsonData(), key: configuration.layout.metadataKey(for: final.status))
        if let failure = uploads.finish() { throw .output("\(name): \(failure)") }
        if let problem, failure == nil { throw .output("\(name): \(problem)") }
    }

    /// Writes queued audio packets whose time is before `videoPTS` (all when nil).
    private func writeAudio(before videoPTS: Int64?, muxer: Muxer) throws(FFmpegError) {
        let limit = videoPTS.map { videoTimeBase.rescale($0, to: MediaTime.microseconds) }
        var written = 0
        for queued in audioQueue {
            if let limit, audioTimeBase.rescale(queued.pts, to: MediaTime.microseconds) >= limit { break }
            try muxer.write(queued, stream: audioStream)
            written += 1
        }
        guard written > 0 else { return }
        for queued in audioQueue.prefix(written) {
            queued.unref()
            packetPool.append(queued)
        }
        audioQueue.removeFirst(written)
    }

    /// Closes the current segment at video time `end` and publishes it with the playlist.
    private func cutSegment(endingAt end: Int64, muxer: Muxer) throws(FFmpegError) {
        guard let start = segmentStart else { return }
        let bytes = try muxer.cutSegment()
        let sequence = playlist.segments.count
        let name = RecordingLayout.segmentName(sequence: sequence)
        upload(Data(bytes), key: configuration.layout.segmentKey(rendition: configuration.renditionName, sequence: sequence))
        // Output times are the encoder's own (0 at the first frame), so no arithmetic here can overflow.
        let date = sequence == 0 ? wallClockOriginMs.map { $0 &+ videoTimeBase.rescale(start, to: MediaTime.milliseconds) } : nil
        playlist.segments.append(HLSSegment(uri: name, duration: MediaTime(ticks: end - start, timeBase: videoTimeBase),
                                            programDateTimeMs: date))
        upload(Data(playlist.render().utf8), key: mediaPlaylistKey)
        segmentStart = end
    }

    private func upload(_ data: Data, key: String) {
        uploads.enqueue(data, key: key)
    }
}
