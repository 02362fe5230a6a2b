// One publisher's individual recording (the seed's "IVS Individual Participant Recording"):
// its media as it arrived, no decode and no encode, remuxed into fragmented-MP4 HLS segments
// cut at keyframes, with the metadata files, playlists and (decoding keyframes only)
// thumbnails, through the same uploads (and S3 spool) as composite recordings.
//
// It reads a ParticipantMediaSource — the same interface compositions read, so a live
// publisher (LiveStageSource's queue) and a recorded file record alike. Single-threaded: the
// caller drives `record(from:)` from its own thread, never from an event loop.
//
// Reconnects: `sourceReplaced()` says the next media comes from a new connection of the same
// participant (within the reconnect window); its first segment carries EXT-X-DISCONTINUITY,
// and a changed codec setup starts a new initialization section.
//
// Configuration changes are bounded (RecordingWorkPolicy.swift): a change costs at most a new
// initialization section, within a budget; beyond it changes are coalesced; a configuration
// that cannot be recorded is refused and skipped; the playlist is written at most once a
// second of media.

public import Destinations
public import FFmpeg
public import Foundation
public import HLS
public import Logging
public import MediaCore
public import Pipeline

public struct ParticipantRecordingPlan: Sendable {
    /// AutoParticipantRecordingConfiguration.mediaTypes.
    public enum MediaTypes: String, Sendable, Equatable {
        case audioVideo = "AUDIO_VIDEO", audioOnly = "AUDIO_ONLY", none = "NONE"
    }

    public var layout: ParticipantRecordingLayout
    public var stageArn: String
    public var mediaTypes: MediaTypes
    public var targetSegmentDurationSeconds: Int
    /// nil: thumbnails DISABLED.
    public var thumbnails: ThumbnailPlan?
    /// Pictures beyond these are refused (skipped until the next good configuration).
    public var recordablePicture = RecordablePicture(maxPixels: DecoderLimits().maxPixels)
    /// How many new initialization sections configuration changes may cost.
    public var changeBudget = ConfigurationChangePolicy.standardBudget
    /// The EVENT playlist is written at most once per this many µs of media.
    public var playlistWriteInterval: Int64 = 1_000_000
    /// Wall-clock time (ms since 1970) of media timestamp 0 (the stage clock's origin): the
    /// playlist's EXT-X-PROGRAM-DATE-TIME tags, by which a re-render places this recording
    /// on the session's timeline. nil: no tags.
    public var timestampEpochMs: Int64?

    public init(layout: ParticipantRecordingLayout, stageArn: String, mediaTypes: MediaTypes = .audioVideo,
                targetSegmentDurationSeconds: Int = 6, thumbnails: ThumbnailPlan? = nil, timestampEpochMs: Int64? = nil) {
        self.layout = layout
        self.stageArn = stageArn
        self.mediaTypes = mediaTypes
        self.targetSegmentDurationSeconds = targetSegmentDurationSeconds
        self.thumbnails = thumbnails
        self.timestampEpochMs = timestampEpochMs
    }

    var recordsHLS: Bool { mediaTypes != .none }
    var recordsVideo: Bool { mediaTypes == .audioVideo }
    var recordsAudio: Bool { mediaTypes != .none }
}

/// How a recording ended.
public struct ParticipantRecordingOutcome: Sendable, Equatable {
    public var status: RecordingStatus
    public var durationMs: Int64
    public var message: String?
    public var segments: Int
    public var thumbnails: Int
    /// Publisher configurations refused (not recordable), coalesced (replaced before they
    /// could start a run: beyond the change budget), and the packets dropped for either.
    public var refusedConfigurations = 0
    public var coalescedConfigurations = 0
    public var droppedPackets = 0
}

public final class ParticipantRecorder {
    public let plan: ParticipantRecordingPlan
    private let uploads: any RecordingUploads
    private let now: () -> Date
    private let logger: Logger
    private var metadata: RecordingMetadata

    /// The streams of the current run, their parameters as the muxer got them.
    private struct Run {
        var muxer: Muxer
        var streams: [MediaType: Int]
        var initName: String
    }

    private var setups: [MediaType: MediaStreamSetup] = [:]
    private var run: Run?
    private var runs = 0
    /// Media that arrived before every expected stream was set up (bounded).
    private var held: [(type: MediaType, packet: Packet)] = []
    static let maxHeldPackets = 600
    /// Waiting for a second stream longer than this starts the recording with one.
    static let setupWait: Int64 = 2_000_000
    private var origin: Int64?
    private var segmentStart: Int64?
    private var lastTime: Int64 = 0
    /// The last decode time written per stream: MP4 needs them increasing, and a live
    /// publisher's timeline may step back a little while its clock offset settles (or across
    /// a reconnect), so a packet at or before it is moved just after it (and counted).
    private var lastDTS: [MediaType: Int64] = [:]
    public private(set) var timestampsAdjusted = 0
    private var discontinuityNext = false
    private var playlist: MediaPlaylist
    private var policy: ConfigurationChangePolicy
    private var playlistWrites: PlaylistWriteSchedule
    private var keyframeWished = false
    /// A video codec fMP4 HLS cannot carry (VP8 from a WHIP publisher that offered no H.264):
    /// its audio and thumbnails are recorded, and the recording's status message says so.
    private var omittedVideoCodec: String?
    /// H.264 sent with its parameter sets in band (WHIP): the latest SPS and PPS seen in a
    /// keyframe, and the picture size its SPS says. Another set is a new configuration (a
    /// simulcast layer switch, a new resolution).
    private var inBandSets: (bytes: [UInt8], size: (width: Int, height: Int)?)?
    static let mp4VideoCodecs: Set<String> = ["h264", "hevc", "av1", "vp9"]
    private var thumbnails: ThumbnailMaker?
    private var thumbnailCount = 0
    private var finished = false
    private let scratch = Packet()
    private static let microseconds = Rational(1, 1_000_000)

    public init(plan: ParticipantRecordingPlan, uploads: any RecordingUploads, now: @escaping () -> Date = Date.init,
                logger: Logger) {
        self.plan = plan
        self.uploads = uploads
        self.now = now
        self.logger = logger
        let thumbnailPlan = plan.thumbnails
        metadata = plan.layout.metadata(stageArn: plan.stageArn, status: .recordingStarted, hls: plan.recordsHLS,
                                        sequentialThumbnails: thumbnailPlan?.sequential == true,
                                        latestThumbnail: thumbnailPlan?.latest == true)
        playlist = MediaPlaylist(targetDurationSeconds: plan.targetSegmentDurationSeconds, mediaSequence: 1, playlistType: .event)
        var recorded: Set<RecordedStream> = []
        if plan.recordsVideo { recorded.insert(.video) }
        if plan.recordsAudio { recorded.insert(.audio) }
        policy = ConfigurationChangePolicy(streams: recorded, budget: plan.changeBudget)
        playlistWrites = PlaylistWriteSchedule(interval: plan.playlistWriteInterval)
        if let thumbnailPlan, thumbnailPlan.sequential || thumbnailPlan.latest { thumbnails = ThumbnailMaker(plan: thumbnailPlan) }
    }

    /// True once per segment that has run past its target duration without a keyframe to
    /// cut at: the caller asks the publisher for one (WHIP senders send them rarely).
    public func takeKeyframeWish() -> Bool {
        guard run?.streams[.video] != nil, !keyframeWished, let start = segmentStart,
              lastTime - start >= Int64(plan.targetSegmentDurationSeconds) * 1_000_000 else { return false }
        keyframeWished = true
        return true
    }

    /// Bytes stored so far.
    public var bytesWritten: Int64 { uploads.bytesWritten }

    /// Configurations refused, coalesced, and packets dropped for them, so far.
    public var refusedConfigurations: Int { policy.refusedConfigurations }
    public var coalescedConfigurations: Int { policy.coalescedConfigurations }
    public var droppedPackets: Int { policy.droppedPackets }

    /// Writes recording-started.json (the recording's start time is in the layout).
    public func start() {
        metadata.startedAt = plan.layout.startedAt
        upload(metadata.jsonData(), key: plan.layout.metadataKey(for: .recordingStarted))
    }

    /// The next media comes from a new connection of the same participant.
    public func sourceReplaced() {
        discontinuityNext = true
        // Its decode times say when it came back: the time away stays in the timeline.
        run?.muxer.markNextFragmentDiscontinuous()
        policy.sourceReplaced()
        setups = [:]
        inBandSets = nil
    }

    /// Drains what `source` has now. Returns false once it has ended.
    public func record(from source: any ParticipantMediaSource) throws(FFmpegError) -> Bool {
        while !finished {
            switch try source.read(into: scratch) {
            case .wouldBlock:
                return true
            case .endOfMedia:
                // The connection is over: its last segment ends with its last packet (a
                // reconnect continues after a discontinuity, not across the gap).
                try cutSegment(at: lastTime)
                if playlistWrites.flush() { uploadPlaylist() }
                return false
            case .streamChanged(let type):
                if let setup = source.stream(type) { setupChanged(type, setup) }
            case .packet(let type):
                guard let setup = setups[type] ?? source.stream(type) else { continue }
                if setups[type] == nil { setupChanged(type, setup) }
                scratch.rescaleTimestamps(from: setup.info.timeBase, to: Self.microseconds)
                try media(type, scratch)
            }
        }
        return false
    }

    // MARK: Media

    private func wanted(_ type: MediaType) -> Bool {
        switch type {
        case .video: plan.recordsVideo || thumbnails != nil
        case .audio: plan.recordsAudio
        case .other: false
        }
    }

    private static func recorded(_ type: MediaType) -> RecordedStream? {
        switch type {
        case .video: .video
        case .audio: .audio
        case .other: nil
        }
    }

    private func setupChanged(_ type: MediaType, _ setup: MediaStreamSetup) {
        guard wanted(type) else { return }
        setups[type] = setup
        if type == .video {
            thumbnails?.reset()
            inBandSets = nil
            // Parameter sets in band: the configuration is the SPS of the next keyframe.
            if Self.carriesParameterSetsInBand(setup) { return }
        }
        guard let stream = Self.recorded(type) else { return }
        configured(stream, configuration(of: setup))
    }

    private static func carriesParameterSetsInBand(_ setup: MediaStreamSetup) -> Bool {
        setup.info.type == .video && setup.info.codecName == "h264" && setup.parameters.extradata.isEmpty
    }

    /// What a run's initialization section stands for — a new codec, configuration record or
    /// picture size (a simulcast publisher switching layers) starts a new one — or why it
    /// cannot be recorded.
    private func configuration(of setup: MediaStreamSetup) -> ConfigurationChangePolicy.Configuration {
        if setup.info.type == .video,
           let reason = plan.recordablePicture.refusal(width: setup.info.width, height: setup.info.height) {
            return .refused(reason: reason)
        }
        let extradata = setup.parameters.extradata
        return .recordable(key: "\(setup.info.codecName)/\(setup.info.width)x\(setup.info.height)/\(extradata.count)/\(extradata.hashValue)")
    }

    /// The configuration of H.264 parameter sets found in band: the picture size their SPS says.
    private func inBandConfiguration(_ sets: [UInt8]) -> (ConfigurationChangePolicy.Configuration, (width: Int, height: Int)?) {
        let key = "h264/in-band/\(sets.count)/\(sets.hashValue)"
        guard let nal = H264ParameterSets.nalUnits(sets).first(where: { ($0.first ?? 0) & 0x1F == 7 }) else {
            return (.refused(reason: "no SPS in the keyframe's parameter sets"), nil)
        }
        // An SPS this parser cannot read may still decode: its size then comes from the keyframe.
        guard let sps = try? AVCSequenceParameterSet(nalUnit: nal) else { return (.recordable(key: key), nil) }
        if let reason = plan.recordablePicture.refusal(width: sps.width, height: sps.height) { return (.refused(reason: reason), nil) }
        return (.recordable(key: key), (sps.width, sps.height))
    }

    private func configured(_ stream: RecordedStream, _ configuration: ConfigurationChangePolicy.Configuration) {
        switch policy.configured(stream, configuration, at: lastTime) {
        case .unchanged:
            break
        case .changed(let discardHeld):
            if discardHeld { discardHeldMedia(of: stream) }
        case .refused(let reason, let report, let discardHeld):
            if discardHeld { discardHeldMedia(of: stream) }
            if report {
                logger.warning("publisher configuration refused: its media is skipped until a good one comes",
                               metadata: ["stream": "\(stream)", "reason": "\(reason)",
                                          "refused_configurations": "\(policy.refusedConfigurations)"])
            }
        }
    }

    private func discardHeldMedia(of stream: RecordedStream) {
        held.removeAll { Self.recorded($0.type) == stream }
    }

    private func media(_ type: MediaType, _ packet: Packet) throws(FFmpegError) {
        guard wanted(type) else { return }
        let time = packet.hasPTS ? packet.pts : packet.dts
        if type == .video {
            if plan.recordsVideo, packet.isKeyframe, let setup = setups[.video], Self.carriesParameterSetsInBand(setup),
               let sets = H264ParameterSets.annexB(in: packet.bytes), sets != inBandSets?.bytes {
                let (configuration, size) = inBandConfiguration(sets)
                inBandSets = (sets, size)
                configured(.video, configuration)
            }
            if let thumbnails, packet.isKeyframe, let setup = setups[.video], !(plan.recordsVideo && policy.isRefused(.video)) {
                if let jpeg = thumbnails.thumbnail(packet, setup: setup, at: time, logger: logger) { store(thumbnail: jpeg) }
            }
            guard plan.recordsVideo else { return }
        }
        guard plan.recordsHLS, let stream = Self.recorded(type) else { return }
        switch policy.packet(stream, keyframe: type == .audio || packet.isKeyframe, at: packet.dts) {
        case .drop:
            return
        case .deferChange(let until):
            logger.warning("publisher configuration changes beyond the recording's budget: coalesced, media of the change skipped",
                           metadata: ["stream": "\(stream)", "resumes_at_us": "\(until)",
                                      "coalesced_configurations": "\(policy.coalescedConfigurations)",
                                      "dropped_packets": "\(policy.droppedPackets)"])
            return
        case .startRun:
            // A new initialization section from this packet on (after a discontinuity).
            try endRun()
            discontinuityNext = true
            guard startRun(keyframe: type == .video ? packet : nil, first: false) else { return }
            try write(type, packet)
            return
        case .write:
            break
        }
        if run == nil {
            guard !policy.hasRun else { return }
            held.append((type, packet.reference()))
            let span = (held.last.map { $0.packet.dts } ?? 0) - (held.first.map { $0.packet.dts } ?? 0)
            guard policy.everyStreamConfigured || span >= Self.setupWait || held.count >= Self.maxHeldPackets else { return }
            try startHeldRun()
            return
        }
        try write(type, packet)
    }

    /// The first run, with the media held for it.
    private func startHeldRun() throws(FFmpegError) {
        let queued = held
        held = []
        guard startRun(keyframe: queued.first { $0.type == .video && $0.packet.isKeyframe }?.packet, first: true) else { return }
        for entry in queued { try write(entry.type, entry.packet) }
    }

    /// Starts a run with every stream's latest recordable configuration; false if there is
    /// none, or the muxer refuses it (that configuration is then refused: the recording goes
    /// on with the next good one).
    private func startRun(keyframe: Packet?, first: Bool) -> Bool {
        var carried: [(MediaType, MediaStreamSetup)] = []
        let recordable = policy.recordableStreams
        for type in [MediaType.video, .audio] {
            guard let setup = setups[type], let stream = Self.recorded(type), recordable.contains(stream) else { continue }
            if type == .video, !Self.mp4VideoCodecs.contains(setup.info.codecName) {
                if omittedVideoCodec == nil {
                    logger.warning("video not recorded: fMP4 HLS cannot carry this codec; audio and thumbnails are",
                                   metadata: ["codec": "\(setup.info.codecName)"])
                }
                omittedVideoCodec = setup.info.codecName
                continue
            }
            carried.append((type, setup))
        }
        guard !carried.isEmpty else {
            if first { policy.firstRunStarted() }
            return false
        }
        do throws(FFmpegError) {
            try makeRun(carrying: carried, keyframe: keyframe)
            if first { policy.firstRunStarted() }
            return true
        } catch {
            let streams = Set(carried.compactMap { Self.recorded($0.0) })
            logger.warning("recording run cannot start with the publisher's configuration: refused, recording goes on",
                           metadata: ["error": "\(error)", "streams": "\(streams.map { "\($0)" }.sorted())"])
            policy.runFailed(carrying: streams, reason: "\(error)")
            return false
        }
    }

    private func makeRun(carrying carried: [(MediaType, MediaStreamSetup)], keyframe: Packet?) throws(FFmpegError) {
        let muxer = try Muxer(format: "mp4", interleaved: false)
        var streams: [MediaType: Int] = [:]
        for (type, setup) in carried {
            var extradata: [UInt8]? = nil
            var size: (width: Int, height: Int)? = nil
            if type == .video, Self.carriesParameterSetsInBand(setup) {
                // WHIP H.264 carries its parameter sets in band: the latest keyframe's.
                extradata = inBandSets?.bytes
                size = inBandSets?.size
            }
            if type == .video, size == nil, setup.info.width <= 0 || setup.info.height <= 0, let keyframe {
                // A stream announced without its size whose SPS did not say it: one keyframe decoded does.
                size = Self.pictureSize(of: keyframe, setup: setup)
            }
            let parameters = try StreamParameters(copying: setup.parameters, timeBase: Self.microseconds, extradata: extradata, size: size)
            streams[type] = try muxer.addStream(parameters)
        }
        try muxer.writeHeader(options: ["movflags": "frag_custom+empty_moov+default_base_moof", "avoid_negative_ts": "disabled"])
        // A later run's decode times go on from the recording's first packet (not from 0).
        muxer.markNextFragmentDiscontinuous()
        let initSection = try muxer.cutSegment()
        runs += 1
        let initName = ParticipantRecordingLayout.initSegmentName(number: runs)
        upload(Data(initSection), key: plan.layout.renditionKey(initName))
        if runs == 1 { playlist.initSegmentURI = initName; uploadMultivariant(keys: streams.keys.sorted { $0 == .video && $1 != .video }) }
        run = Run(muxer: muxer, streams: streams, initName: initName)
    }

    private static func pictureSize(of keyframe: Packet, setup: MediaStreamSetup) -> (width: Int, height: Int)? {
        guard let decoder = try? Decoder(parameters: setup.parameters, stream: setup.info) else { return nil }
        let frame = Frame()
        _ = try? decoder.send(keyframe)
        _ = try? decoder.send(nil)
        guard (try? decoder.receive(into: frame)) == .frame, frame.width > 0 else { return nil }
        return (frame.width, frame.height)
    }

    private func write(_ type: MediaType, _ packet: Packet) throws(FFmpegError) {
        guard let run, let stream = run.streams[type] else { return }
        let time = packet.dts
        if origin == nil { origin = time }
        // Cut at video keyframes, or at any packet while the run has no video flowing (a refused
        // or deferred configuration: the sound's segments still end on time).
        let cutsHere = run.streams[.video] != nil && !policy.isSuspended(.video) ? (type == .video && packet.isKeyframe) : true
        if let start = segmentStart, cutsHere, time - start >= Int64(plan.targetSegmentDurationSeconds) * 1_000_000 {
            try cutSegment(at: time)
        }
        if segmentStart == nil { segmentStart = time }
        // Fragments start at the recording's first packet: decode time 0.
        let base = origin ?? time
        var dts = packet.dts - base
        var pts = (packet.hasPTS ? packet.pts : packet.dts) - base
        // A millisecond apart at least: more than one tick of any time base MP4 uses, so the
        // times stay strictly increasing after the muxer's rounding.
        if let last = lastDTS[type], dts < last + 1000 {
            pts += last + 1000 - dts
            dts = last + 1000
        }
        if lastDTS[type].map({ packet.dts - base < $0 + 1000 }) == true { timestampsAdjusted += 1 }
        lastDTS[type] = dts
        packet.dts = dts
        packet.pts = pts
        try run.muxer.write(packet, stream: stream)
        lastTime = max(lastTime, time + max(0, packet.duration))
        if playlistWrites.due(at: time) { uploadPlaylist() }
    }

    private func cutSegment(at end: Int64) throws(FFmpegError) {
        guard let run, let start = segmentStart, end > start else { return }
        let bytes = try run.muxer.cutSegment()
        // Every fragment starts at its own packets' decode times, not where the previous one's
        // durations end: live media has gaps (a stalled or replicated source) that must stay gaps.
        run.muxer.markNextFragmentDiscontinuous()
        segmentStart = nil
        keyframeWished = false
        guard !bytes.isEmpty else { return }
        let number = playlist.segments.count + 1
        let name = ParticipantRecordingLayout.segmentName(number: number)
        upload(Data(bytes), key: plan.layout.renditionKey(name))
        let discontinuity = discontinuityNext && number > 1
        // Stage-clock µs are bounded (LiveMediaSettings.timestampLimit), the epoch is a date.
        let date = (number == 1 || discontinuity) ? plan.timestampEpochMs.map { $0 &+ Int64.floorDivide(start, 1000) } : nil
        playlist.segments.append(HLSSegment(uri: name, duration: MediaTime(ticks: max(1, end - start), timeBase: Self.microseconds),
                                            discontinuity: discontinuity, initSegmentURI: run.initName, programDateTimeMs: date))
        discontinuityNext = false
        // Rewritten whole (an object store has no append): at most once a second of media.
        if playlistWrites.segmentAdded(at: end) { uploadPlaylist() }
    }

    private func uploadPlaylist() { upload(Data(playlist.render().utf8), key: plan.layout.mediaPlaylistKey) }

    private func endRun() throws(FFmpegError) {
        guard let run else { return }
        try cutSegment(at: max(lastTime, (segmentStart ?? 0) + 1))
        _ = try? run.muxer.finish()
        self.run = nil
        lastDTS = [:]
    }

    private func uploadMultivariant(keys types: [MediaType]) {
        var codecs: [String] = []
        var resolution: VideoResolution?
        for type in types {
            guard let setup = setups[type] else { continue }
            codecs.append(RFC6381.codec(of: setup))
            if type == .video, setup.info.width > 0 { resolution = VideoResolution(width: setup.info.width, height: setup.info.height) }
        }
        let variant = MultivariantPlaylist.Variant(bandwidth: 8_500_000, resolution: resolution, frameRate: nil,
                                                   codecs: codecs.joined(separator: ","),
                                                   uri: "\(ParticipantRecordingLayout.renditionPath)/\(RecordingLayout.mediaPlaylistName)")
        upload(Data(MultivariantPlaylist(variants: [variant]).render().utf8), key: plan.layout.multivariantPlaylistKey)
    }

    private func store(thumbnail jpeg: [UInt8]) {
        guard let thumbnailPlan = plan.thumbnails else { return }
        thumbnailCount += 1
        if thumbnailPlan.sequential { upload(Data(jpeg), key: plan.layout.thumbnailKey(number: thumbnailCount)) }
        if thumbnailPlan.latest { upload(Data(jpeg), key: plan.layout.latestThumbnailKey) }
    }

    // MARK: End

    /// Closes the recording: the last segment, the VOD playlist (naming only stored
    /// segments), recording-ended.json or recording-failed.json. Blocks until stored.
    @discardableResult
    public func finish(failure: String? = nil) -> ParticipantRecordingOutcome {
        guard !finished else {
            return ParticipantRecordingOutcome(status: metadata.status, durationMs: playlist.durationMs, message: metadata.statusMessage,
                                               segments: playlist.segments.count, thumbnails: thumbnailCount,
                                               refusedConfigurations: policy.refusedConfigurations,
                                               coalescedConfigurations: policy.coalescedConfigurations, droppedPackets: policy.droppedPackets)
        }
        finished = true
        var problem = failure
        if run == nil, !held.isEmpty {
            do { try startHeldRun() } catch { problem = problem ?? "\(error)" }
            held = []
        }
        do { try endRun() } catch { problem = problem ?? "\(error)" }
        let failed = uploads.failedKeysWhenSettled()
        if !failed.isEmpty {
            let keys = playlist.segments.map { plan.layout.renditionKey($0.uri) }
            if let first = keys.firstIndex(where: failed.contains) { playlist.segments.removeSubrange(first...) }
            problem = problem ?? uploads.firstFailure ?? "\(failed.count) objects could not be stored"
        }
        if plan.recordsHLS {
            if run == nil, runs == 0 {
                // Nothing to play: an empty VOD playlist still says so.
                playlist.initSegmentURI = nil
            }
            playlist = playlist.finished()
            _ = playlistWrites.flush()
            uploadPlaylist()
        }
        let note = omittedVideoCodec.map { "video (\($0.uppercased())) not recorded: fMP4 HLS cannot carry it; audio and thumbnails recorded" }
        metadata = metadata.ended(at: now(), durationMs: playlist.durationMs, failure: problem, message: note)
        upload(metadata.jsonData(), key: plan.layout.metadataKey(for: metadata.status))
        if let failure = uploads.finish() {
            problem = problem ?? failure
            if metadata.status != .recordingEndedWithFailure {
                logger.warning("participant recording not fully stored", metadata: ["reason": "\(failure)"])
            }
        }
        return ParticipantRecordingOutcome(status: problem == nil ? .recordingEnded : .recordingEndedWithFailure,
                                           durationMs: playlist.durationMs, message: problem,
                                           segments: playlist.segments.count, thumbnails: thumbnailCount,
                                           refusedConfigurations: policy.refusedConfigurations,
                                           coalescedConfigurations: policy.coalescedConfigurations,
                                           droppedPackets: policy.droppedPackets)
    }

    private func upload(_ data: Data, key: String) { uploads.enqueue(data, key: key) }
}

/// Thumbnails from video keyframes only, at most one per interval: each keyframe due is
/// decoded on its own (an IDR needs nothing before it) by a decoder made for it and dropped
/// after (a 720p H.264 decoder holds several MiB of pictures; thumbnails are seconds apart),
/// and encoded as JPEG at its size.
final class ThumbnailMaker {
    let plan: ThumbnailPlan
    private var last: Int64?

    init(plan: ThumbnailPlan) { self.plan = plan }

    func reset() {}

    func thumbnail(_ packet: Packet, setup: MediaStreamSetup, at time: Int64, logger: Logger) -> [UInt8]? {
        if let last, time - last < Int64(plan.intervalSeconds) * 1_000_000 { return nil }
        do {
            let decoder = try Decoder(parameters: setup.parameters, stream: setup.info)
            let frame = Frame()
            _ = try decoder.send(packet)
            _ = try decoder.send(nil)
            guard try decoder.receive(into: frame) == .frame, frame.isYUV420P else { return nil }
            last = time
            return try JPEGEncoder(width: frame.width, height: frame.height).encode(frame)
        } catch {
            logger.debug("no thumbnail from this keyframe", metadata: ["error": "\(error)"])
            return nil
        }
    }
}

/// SPS and PPS found in an Annex B access unit, as Annex B extradata (what the MP4 muxer turns
/// into an avcC record).
enum H264ParameterSets {
    static func annexB(in bytes: [UInt8]) -> [UInt8]? {
        var sps: [UInt8]?, pps: [UInt8]?
        for nal in nalUnits(bytes) where !nal.isEmpty {
            switch nal[0] & 0x1F {
            case 7 where sps == nil: sps = nal
            case 8 where pps == nil: pps = nal
            default: break
            }
        }
        guard let sps, let pps else { return nil }
        return [0, 0, 0, 1] + sps + [0, 0, 0, 1] + pps
    }

    static func nalUnits(_ bytes: [UInt8]) -> [[UInt8]] {
        var units: [[UInt8]] = []
        var start: Int?
        var index = 0
        while index + 2 < bytes.count {
            if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 {
                if let start { units.append(trimmed(bytes[start..<index])) }
                index += 3
                start = index
            } else {
                index += 1
            }
        }
        if let start, start < bytes.count { units.append(Array(bytes[start...])) }
        return units
    }

    private static func trimmed(_ slice: ArraySlice<UInt8>) -> [UInt8] {
        var end = slice.endIndex
        while end > slice.startIndex, slice[end - 1] == 0 { end -= 1 }
        return Array(slice[slice.startIndex..<end])
    }
}

/// RFC 6381 codec strings for the multivariant playlist, from a stream as it arrived.
enum RFC6381 {
    static func codec(of setup: MediaStreamSetup) -> String {
        let extradata = setup.parameters.extradata
        switch setup.info.codecName {
        case "h264":
            if extradata.count >= 4, extradata[0] == 1 { return avc(extradata[1], extradata[2], extradata[3]) }
            if let sps = H264ParameterSets.nalUnits(extradata).first(where: { ($0.first ?? 0) & 0x1F == 7 }), sps.count >= 4 {
                return avc(sps[1], sps[2], sps[3])
            }
            return "avc1.42e01f"
        case "aac": return "mp4a.40.2"
        case "opus": return "opus"
        case "mp3": return "mp4a.40.34"
        default: return setup.info.codecName
        }
    }

    private static func avc(_ profile: UInt8, _ compatibility: UInt8, _ level: UInt8) -> String {
        "avc1." + [profile, compatibility, level].map { String($0, radix: 16).leftPadded() }.joined()
    }
}

extension String {
    fileprivate func leftPadded() -> String { count < 2 ? "0" + self : self }
}
