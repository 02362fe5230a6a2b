// The recorder under hostile configuration changes (issue 38, items 4 and 5), on real media
// played back as a live RTMP publisher's would come (a sequence header, then its frames):
// a new configuration every frame costs a bounded number of objects and playlist bytes, and
// a sequence header no MP4 can carry is skipped while the media around it is recorded.
import Destinations
import FFmpeg
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HLS
import Logging
import MediaCore
import ParticipantRecording
import Pipeline
import Storage
import Testing
import TestSupport

/// Media read up front, played back with the stream setups a test puts before its packets.
final class ScriptedMediaSource: ParticipantMediaSource {
    enum Event {
        case configure(MediaType, MediaStreamSetup)
        /// Timestamps in µs.
        case packet(MediaType, bytes: [UInt8], pts: Int64, dts: Int64, keyframe: Bool)
    }

    private let events: [Event]
    private var next = 0
    private var setups: [MediaType: MediaStreamSetup] = [:]

    init(_ events: [Event]) { self.events = events }

    func stream(_ type: MediaType) -> MediaStreamSetup? { setups[type] }

    func read(into packet: Packet) throws(FFmpegError) -> MediaSourceRead {
        guard next < events.count else { return .endOfMedia }
        defer { next += 1 }
        switch events[next] {
        case .configure(let type, let setup):
            setups[type] = setup
            return .streamChanged(type)
        case .packet(let type, let bytes, let pts, let dts, let keyframe):
            try packet.fill(bytes)
            packet.pts = pts
            packet.dts = dts
            packet.isKeyframe = keyframe
            packet.streamIndex = type == .video ? 0 : 1
            return .packet(type)
        }
    }

    var startTimeMicroseconds: Int64? { 0 }
    var durationMicroseconds: Int64? { nil }
    var isLive: Bool { true }
}

/// One clip's media, as an RTMP publisher sends it: configuration records and packets in µs.
struct PublisherMedia {
    struct Frame {
        var bytes: [UInt8]
        var pts: Int64
        var dts: Int64
        var keyframe: Bool
    }

    var avcC: [UInt8]
    var width: Int
    var height: Int
    var audioConfig: [UInt8]
    var video: [Frame] = []
    var audio: [Frame] = []

    init(url: String) throws {
        let source = try DemuxerMediaSource(url: url)
        let video = try #require(source.stream(.video)), audio = try #require(source.stream(.audio))
        avcC = video.parameters.extradata
        width = video.info.width
        height = video.info.height
        audioConfig = audio.parameters.extradata
        let packet = Packet()
        while case .packet(let type) = try source.read(into: packet) {
            let setup = type == .video ? video : audio
            packet.rescaleTimestamps(from: setup.info.timeBase, to: Rational(1, 1_000_000))
            let frame = Frame(bytes: packet.bytes, pts: packet.pts, dts: packet.dts, keyframe: packet.isKeyframe)
            if type == .video { self.video.append(frame) } else { self.audio.append(frame) }
        }
    }

    /// The setup a live source makes of an RTMP sequence header (LiveMediaSource).
    static func videoSetup(avcC: [UInt8], width: Int, height: Int) throws -> MediaStreamSetup {
        let configuration = CodecConfiguration(codec: .h264, extradata: avcC, width: width, height: height)
        return MediaStreamSetup(info: StreamInfo(index: 0, type: .video, codecName: "h264", timeBase: Rational(1, 1_000_000),
                                                 width: width, height: height),
                                parameters: try CodecParameters(configuration), inBandExtradata: avcC)
    }

    /// WHIP's: H.264 announced without a configuration record or size (WebRTCMediaForwarder);
    /// its parameter sets come in band.
    static func inBandVideoSetup() throws -> MediaStreamSetup {
        MediaStreamSetup(info: StreamInfo(index: 0, type: .video, codecName: "h264", timeBase: Rational(1, 1_000_000)),
                         parameters: try CodecParameters(CodecConfiguration(codec: .h264)))
    }

    /// An avcC-framed (length-prefixed) access unit in Annex B, as a WHIP depacketizer gives it,
    /// with `avcC`'s SPS and PPS before a keyframe's slices.
    static func annexB(_ frame: Frame, avcC: [UInt8]) throws -> [UInt8] {
        let start: [UInt8] = [0, 0, 0, 1]
        var output: [UInt8] = []
        if frame.keyframe {
            var offset = 5
            for _ in 0..<2 {  // the SPS list, then the PPS list
                let count = Int(avcC[offset] & (offset == 5 ? 0x1F : 0xFF))
                offset += 1
                for _ in 0..<count {
                    let length = Int(avcC[offset]) << 8 | Int(avcC[offset + 1])
                    output += start + avcC[(offset + 2)..<(offset + 2 + length)]
                    offset += 2 + length
                }
            }
        }
        let lengthSize = Int(avcC[4] & 3) + 1
        var offset = 0
        while offset + lengthSize <= frame.bytes.count {
            let length = frame.bytes[offset..<(offset + lengthSize)].reduce(0) { $0 << 8 | Int($1) }
            offset += lengthSize
            guard offset + length <= frame.bytes.count else { throw BadSPS.Malformed() }
            output += start + frame.bytes[offset..<(offset + length)]
            offset += length
        }
        return output
    }

    func audioSetup() throws -> MediaStreamSetup {
        let configuration = CodecConfiguration(codec: .aac, extradata: audioConfig, sampleRate: 48_000, channelCount: 1)
        return MediaStreamSetup(info: StreamInfo(index: 1, type: .audio, codecName: "aac", timeBase: Rational(1, 1_000_000),
                                                 sampleRate: 48_000, channelCount: 1),
                                parameters: try CodecParameters(configuration))
    }
}

/// Uploads counted on their way to a local directory: objects and playlist bytes.
final class CountingUploads: RecordingUploads, @unchecked Sendable {
    let base: UploadQueue
    private let lock = NSLock()
    private var counts: (objects: Int, playlistWrites: Int, playlistBytes: Int, initSections: Int) = (0, 0, 0, 0)

    init(root: URL) { base = UploadQueue(storage: LocalDirectoryStorage(root: root), logger: RecorderHarness.logger) }

    var objects: Int { lock.withLock { counts.objects } }
    var playlistWrites: Int { lock.withLock { counts.playlistWrites } }
    var playlistBytes: Int { lock.withLock { counts.playlistBytes } }
    var initSections: Int { lock.withLock { counts.initSections } }

    func enqueue(_ data: Data, key: String) {
        lock.withLock {
            counts.objects += 1
            if key.hasSuffix("/high/playlist.m3u8") {
                counts.playlistWrites += 1
                counts.playlistBytes += data.count
            }
            if key.contains("/high/init") { counts.initSections += 1 }
        }
        base.enqueue(data, key: key)
    }

    func finish() -> String? { base.finish() }
    var firstFailure: String? { base.firstFailure }
    func failedKeysWhenSettled() -> Set<String> { base.failedKeysWhenSettled() }
    var bytesWritten: Int64 { base.bytesWritten }
}

/// How a publisher's configuration changes reach the recorder.
enum Ingest: String, CaseIterable, Sendable {
    /// A new sequence header (a stream setup) before the frames it configures.
    case rtmp
    /// One setup without a configuration record; the SPS and PPS in every keyframe.
    case whip
}

struct ConfigurationChangeTests {
    static let stageArn = "arn:aws:ivs:us-east-1:123456789012:stage/AbCdef1G2hij"

    /// `seconds` of 30 fps H.264 (baseline, GOP `gop`) at `size` and a 440 Hz AAC tone, in FLV.
    static func clip(_ name: String, size: String, seconds: Int, gop: Int, in directory: URL) throws -> String {
        let path = directory.appendingPathComponent("\(name).flv").path
        try RecorderHarness.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=\(size):rate=30", "-f", "lavfi",
                                    "-i", "sine=frequency=440:sample_rate=48000", "-t", "\(seconds)",
                                    "-c:v", "libx264", "-preset", "ultrafast", "-profile:v", "baseline", "-pix_fmt", "yuv420p", "-g", "\(gop)", "-bf", "0",
                                    "-c:a", "aac", "-ac", "1", "-b:a", "64k", path])
        return path
    }

    /// Records `events` as the daemon does (ParticipantRecordings): an error from the recorder
    /// ends the recording with a failure.
    static func record(_ events: [ScriptedMediaSource.Event], in directory: URL,
                       segmentSeconds: Int = 6) async throws -> (RecordedOutput, ParticipantRecordingOutcome, CountingUploads, cpuSeconds: Double) {
        /// Handed to the recording thread and back (used by one thread at a time).
        final class Box<Value>: @unchecked Sendable {
            let value: Value
            init(_ value: Value) { self.value = value }
        }
        let script = Box(events)
        let box = try await onThread { () throws -> Box<(RecordedOutput, ParticipantRecordingOutcome, CountingUploads, cpuSeconds: Double)> in
            let layout = ParticipantRecordingLayout(stageId: "AbCdef1G2hij", sessionId: "st-ZyXwvu1T2sABC", participantId: "p1",
                                                    startedAt: Date(timeIntervalSince1970: 1_764_158_000))
            let storage = directory.appendingPathComponent("bucket")
            let uploads = CountingUploads(root: storage)
            let plan = ParticipantRecordingPlan(layout: layout, stageArn: stageArn, targetSegmentDurationSeconds: segmentSeconds,
                                                timestampEpochMs: 1_764_158_000_000)
            let recorder = ParticipantRecorder(plan: plan, uploads: uploads, logger: RecorderHarness.logger)
            recorder.start()
            let source = ScriptedMediaSource(script.value)
            var failure: String?
            let cpuBefore = threadCPUSeconds()
            do { while try recorder.record(from: source) {} } catch { failure = "\(error)" }
            let cpu = threadCPUSeconds() - cpuBefore
            return Box((RecordedOutput(root: storage, layout: layout), recorder.finish(failure: failure), uploads, cpu))
        }
        return box.value
    }

    /// CPU time of the calling thread: the recorder's own work, apart from storage's threads.
    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// `frames` as `ingest` delivers them, frame i under configuration record `records[i]`
    /// (its picture `sizes[i]`), interleaved with `audio`.
    static func events(_ frames: [PublisherMedia.Frame], records: [[UInt8]], sizes: [(width: Int, height: Int)],
                       audio: PublisherMedia, ingest: Ingest) throws -> [ScriptedMediaSource.Event] {
        var video: [(frame: PublisherMedia.Frame, before: [ScriptedMediaSource.Event])] = []
        for (index, frame) in frames.enumerated() {
            switch ingest {
            case .rtmp:
                let changed = index == 0 || records[index] != records[index - 1]
                let setup = try PublisherMedia.videoSetup(avcC: records[index], width: sizes[index].width, height: sizes[index].height)
                video.append((frame, changed ? [.configure(.video, setup)] : []))
            case .whip:
                var inBand = frame
                inBand.bytes = try PublisherMedia.annexB(frame, avcC: records[index])
                video.append((inBand, index == 0 ? [.configure(.video, try PublisherMedia.inBandVideoSetup())] : []))
            }
        }
        return [.configure(.audio, try audio.audioSetup())] + interleaved(video, audio: audio.audio)
    }

    /// Every packet of `media` in decode order, video and audio interleaved.
    static func interleaved(_ video: [(frame: PublisherMedia.Frame, before: [ScriptedMediaSource.Event])],
                            audio: [PublisherMedia.Frame]) -> [ScriptedMediaSource.Event] {
        var events: [ScriptedMediaSource.Event] = []
        var audioIndex = 0
        for (frame, before) in video {
            while audioIndex < audio.count, audio[audioIndex].dts <= frame.dts {
                let sound = audio[audioIndex]
                events.append(.packet(.audio, bytes: sound.bytes, pts: sound.pts, dts: sound.dts, keyframe: true))
                audioIndex += 1
            }
            events += before
            events.append(.packet(.video, bytes: frame.bytes, pts: frame.pts, dts: frame.dts, keyframe: frame.keyframe))
        }
        for sound in audio[audioIndex...] {
            events.append(.packet(.audio, bytes: sound.bytes, pts: sound.pts, dts: sound.dts, keyframe: true))
        }
        return events
    }

    @Test("a new sequence header (RTMP) or in-band SPS (WHIP) every frame for 30 s: objects and playlist bytes stay within a rate, the sound is all recorded",
          arguments: Ingest.allCases)
    func everyFrameStorm(ingest: Ingest) async throws {
        let directory = try RecorderHarness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let seconds = 30
        // Four picture sizes, every frame a keyframe (each sequence header comes with one).
        let sizes = ["160x120", "176x144", "192x144", "208x160"]
        var clips: [PublisherMedia] = []
        for (index, size) in sizes.enumerated() {
            clips.append(try PublisherMedia(url: try Self.clip("storm\(index)", size: size, seconds: seconds, gop: 1, in: directory)))
        }
        let frames = clips.map(\.video.count).min() ?? 0
        #expect(frames >= seconds * 30 - 1)
        let clip = { (index: Int) in clips[index % clips.count] }
        let events = try Self.events((0..<frames).map { clip($0).video[$0] }, records: (0..<frames).map { clip($0).avcC },
                                     sizes: (0..<frames).map { (clip($0).width, clip($0).height) }, audio: clips[0], ingest: ingest)

        let (output, outcome, uploads, cpuSeconds) = try await Self.record(events, in: directory)
        #expect(outcome.status == .recordingEnded, "\(outcome)")
        let finalPlaylist = try output.text(output.layout.mediaPlaylistKey)
        print("\(ingest) storm of \(frames) configurations in \(seconds) s: \(uploads.objects) objects (\(uploads.initSections) init sections), "
              + "\(uploads.playlistWrites) playlist writes, \(uploads.playlistBytes) playlist bytes (final \(finalPlaylist.utf8.count)), "
              + "\(outcome.segments) segments, recorder CPU \(String(format: "%.3f", cpuSeconds)) s")
        // The budget: 4 changes at once, then one per 2 s: at most 1 + 4 + 15 runs, each an
        // init section and (ending the last run's segment) a segment, the segments cut every
        // 6 s, a playlist write per second at most (+ the VOD one), 2 metadata files, the
        // multivariant playlist: 40 + 5 + 32 + 3 = 80 objects. (Before: about 2,700.)
        #expect(uploads.initSections <= 1 + 4 + 15, "\(uploads.initSections) init sections")
        #expect(uploads.objects <= 80, "\(uploads.objects) objects")
        #expect(uploads.playlistWrites <= seconds + 2, "\(uploads.playlistWrites) playlist writes")
        #expect(uploads.playlistBytes <= (seconds + 2) * finalPlaylist.utf8.count, "\(uploads.playlistBytes) playlist bytes")
        #expect(finalPlaylist.utf8.count <= 4_000, "\(finalPlaylist.utf8.count) bytes")

        // Still a valid playlist: every change of initialization section after a discontinuity.
        let playlist = try MediaPlaylist.parse(finalPlaylist)
        var map = playlist.initSegmentURI
        for segment in playlist.segments {
            if let segmentMap = segment.initSegmentURI, segmentMap != map {
                #expect(segment.discontinuity, "EXT-X-MAP \(segmentMap) without EXT-X-DISCONTINUITY")
                map = segmentMap
            }
        }
        // All the sound is there, and every run decodes as a player plays it: its initialization
        // section, then its segments (ffmpeg's HLS reader keeps the first section's parameter
        // sets across EXT-X-MAP changes, so each run is decoded on its own).
        var runs: [(map: String, segments: [String])] = []
        for segment in playlist.segments {
            let segmentMap = segment.initSegmentURI ?? playlist.initSegmentURI ?? ""
            if runs.last?.map != segmentMap { runs.append((segmentMap, [])) }
            runs[runs.count - 1].segments.append(segment.uri)
        }
        #expect(runs.count == uploads.initSections, "\(runs.count) runs in the playlist")
        let pictureSizes = Set(clips.map { "\($0.width)x\($0.height)" })
        var videoFrames = 0
        for (index, run) in runs.enumerated() {
            var bytes = try Data(contentsOf: output.url(output.layout.renditionKey(run.map)))
            for uri in run.segments { bytes += try Data(contentsOf: output.url(output.layout.renditionKey(uri))) }
            let file = directory.appendingPathComponent("run-\(index).mp4")
            try bytes.write(to: file)
            let decoded = try runTool("ffmpeg", ["-v", "error", "-i", file.path, "-f", "null", "-"], keeping: .both)
            #expect(decoded.status == 0 && decoded.text.isEmpty, "run \(index) (\(run.map)): \(decoded.text)")
            let frames = try RecorderHarness.ffprobe(["-select_streams", "v", "-show_entries", "frame=width,height", "-of", "csv=p=0",
                                                      file.path])
                .split(separator: "\n").map { $0.split(separator: ",").prefix(2).joined(separator: "x") }.filter { !$0.isEmpty }
            // A run holds its own configuration's pictures: the one that started it, and those
            // of the same picture size after a change back to it (every fourth frame here).
            #expect(Set(frames).count == 1 && frames.allSatisfy(pictureSizes.contains), "run \(index): \(Set(frames))")
            videoFrames += frames.count
        }
        print("\(ingest): \(videoFrames) pictures recorded in \(runs.count) runs")
        #expect(videoFrames >= runs.count)
        let audioDuration = try RecorderHarness.ffprobe(["-select_streams", "a", "-show_entries", "packet=duration_time", "-of", "csv=p=0",
                                                         output.url(output.layout.mediaPlaylistKey).path])
            .split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }.reduce(0, +)
        #expect(abs(audioDuration - Double(seconds)) < 0.1, "\(audioDuration) s of sound")
    }

    @Test("a sequence header (RTMP) or in-band SPS (WHIP) 1,048,592 pixels wide is skipped: the recording goes on, and the media after the next good one is recorded",
          arguments: Ingest.allCases)
    func badSequenceHeaderIsSkipped(ingest: Ingest) async throws {
        let directory = try RecorderHarness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let media = try PublisherMedia(url: try Self.clip("clip", size: "320x240", seconds: 8, gop: 30, in: directory))
        let wideAVCC = try BadSPS.widened(avcC: media.avcC, widthInMacroblocks: 65_537)
        let wideSPS = try AVCSequenceParameterSet(nalUnit: BadSPS.sequenceParameterSet(in: wideAVCC))
        #expect(wideSPS.width == 1_048_592 && wideSPS.height == 240)
        // Good from the start, the wide header before the keyframe at 3 s, good again before the one at 4 s.
        #expect(media.video.count == 240 && [0, 90, 120].allSatisfy { media.video[$0].keyframe })
        let wide = 90..<120
        let events = try Self.events(media.video, records: media.video.indices.map { wide.contains($0) ? wideAVCC : media.avcC },
                                     sizes: media.video.indices.map { wide.contains($0) ? (wideSPS.width, wideSPS.height) : (media.width, media.height) },
                                     audio: media, ingest: ingest)
        let (output, outcome, _, _) = try await Self.record(events, in: directory, segmentSeconds: 2)

        #expect(outcome.status == .recordingEnded, "\(outcome)")
        #expect(abs(outcome.durationMs - 8000) <= 100, "\(outcome)")
        let ended = try output.json(output.layout.metadataKey(for: .recordingEnded))
        #expect(ended["recording_status"] as? String == "RECORDING_ENDED")
        let url = output.url(output.layout.mediaPlaylistKey).path
        // Video decodes from 0 to 3 s and from 4 s to the end, nothing of the refused header's.
        let decoded = try runTool("ffmpeg", ["-v", "error", "-i", url, "-f", "null", "-"], keeping: .both)
        #expect(decoded.status == 0 && decoded.text.isEmpty, "\(decoded.text)")
        let probe = try RecorderHarness.ffprobe(["-select_streams", "v", "-show_entries", "frame=pts_time,width", "-of", "csv=p=0", url])
        let rows = probe.split(separator: "\n").map { $0.split(separator: ",") }.filter { $0.count == 2 }
        let times = rows.compactMap { Double($0[0]) }
        #expect(rows.allSatisfy { $0[1] == "320" }, "\(Set(rows.map { $0[1] }))")
        // The clip's video starts at 0.021 s: 90 frames before the wide header, 120 after the good one.
        #expect(times.filter { $0 < 3 }.count == 90, "\(times.filter { $0 < 3 }.count) frames before the wide header")
        #expect(times.filter { $0 > 3 && $0 < 4 }.isEmpty, "frames of the refused header recorded")
        #expect(times.filter { $0 > 4 }.count == 120, "\(times.filter { $0 > 4 }.count) frames after the good header")
        let audio = try RecorderHarness.ffprobe(["-select_streams", "a", "-show_entries", "packet=duration_time", "-of", "csv=p=0", url])
            .split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }.reduce(0, +)
        #expect(abs(audio - 8) < 0.1, "\(audio) s of sound")
    }
}

/// An H.264 SPS rewritten to another width: what a hostile publisher sends.
enum BadSPS {
    struct Malformed: Error {}

    /// `avcC` (one SPS, one PPS, baseline profile) with the SPS's pic_width_in_mbs_minus1 set
    /// to `widthInMacroblocks - 1`.
    static func widened(avcC: [UInt8], widthInMacroblocks: Int) throws -> [UInt8] {
        guard avcC.count > 8, avcC[5] & 0x1F == 1 else { throw Malformed() }
        let sps = try sequenceParameterSet(in: avcC)
        let rest = Array(avcC[(8 + sps.count)...])
        guard sps[1] == 66 else { throw Malformed() }  // baseline: no chroma format or scaling lists
        var reader = Bits(AVCSequenceParameterSet.removingEmulationPrevention(sps.dropFirst()))
        var writer = BitWriter()
        for _ in 0..<24 { writer.bit(try reader.bit()) }  // profile, constraints, level
        writer.unsigned(try reader.unsigned())  // seq_parameter_set_id
        writer.unsigned(try reader.unsigned())  // log2_max_frame_num_minus4
        let pocType = try reader.unsigned()
        writer.unsigned(pocType)
        if pocType == 0 { writer.unsigned(try reader.unsigned()) }
        guard pocType != 1 else { throw Malformed() }
        writer.unsigned(try reader.unsigned())  // max_num_ref_frames
        writer.bit(try reader.bit())  // gaps_in_frame_num_value_allowed_flag
        _ = try reader.unsigned()
        writer.unsigned(widthInMacroblocks - 1)
        // The rest as it was, up to its stop bit (rewritten after the copy).
        var tail: [Int] = []
        while let bit = try? reader.bit() { tail.append(bit) }
        while tail.last == 0 { tail.removeLast() }
        for bit in tail { writer.bit(bit) }
        let rbsp = writer.bytes()
        let newSPS = [sps[0]] + Self.addingEmulationPrevention(rbsp)
        return Array(avcC[0..<6]) + [UInt8(newSPS.count >> 8), UInt8(newSPS.count & 0xFF)] + newSPS + rest
    }

    /// The first SPS of an avcC record, with its NAL header.
    static func sequenceParameterSet(in avcC: [UInt8]) throws -> [UInt8] {
        guard avcC.count > 8 else { throw Malformed() }
        let length = Int(avcC[6]) << 8 | Int(avcC[7])
        guard avcC.count >= 8 + length else { throw Malformed() }
        return Array(avcC[8..<(8 + length)])
    }

    static func addingEmulationPrevention(_ bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        var zeros = 0
        for byte in bytes {
            if zeros >= 2, byte <= 3 {
                output.append(3)
                zeros = 0
            }
            output.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return output
    }

    struct Bits {
        let bytes: [UInt8]
        var offset = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }

        mutating func bit() throws -> Int {
            guard offset < bytes.count * 8 else { throw Malformed() }
            defer { offset += 1 }
            return Int(bytes[offset / 8] >> (7 - UInt8(offset % 8))) & 1
        }

        mutating func unsigned() throws -> Int {
            var zeros = 0
            while try bit() == 0 { zeros += 1 }
            var value = 0
            for _ in 0..<zeros { value = value << 1 | (try bit()) }
            return (1 << zeros) - 1 + value
        }
    }

    struct BitWriter {
        private var bits: [Int] = []

        mutating func bit(_ value: Int) { bits.append(value & 1) }

        mutating func unsigned(_ value: Int) {
            let code = value + 1
            let length = Int.bitWidth - code.leadingZeroBitCount
            for _ in 0..<(length - 1) { bits.append(0) }
            for index in stride(from: length - 1, through: 0, by: -1) { bits.append(code >> index & 1) }
        }

        /// The RBSP: the bits, a stop bit, zeros to a byte.
        func bytes() -> [UInt8] {
            var all = bits + [1]
            while all.count % 8 != 0 { all.append(0) }
            return stride(from: 0, to: all.count, by: 8).map { start in
                UInt8(all[start..<(start + 8)].reduce(0) { $0 << 1 | $1 })
            }
        }
    }
}
