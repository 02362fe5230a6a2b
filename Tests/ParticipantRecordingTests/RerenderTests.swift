// Composing a session again from its individual recordings: what the recorder wrote, read
// back as a recorded stage (SessionRecordings), must put each participant on screen when it
// was there — its media starts the moment it publishes, in fragments that hold a segment's
// video before its audio.
import Destinations
import FFmpeg
import Foundation
import HLS
import Layout
import Logging
import MediaCore
import ParticipantRecording
import Pipeline
import Stages
import Testing
import TestSupport

@Suite struct RerenderTests {
    /// Colour at the canvas centre, every output frame.
    final class CentreProbe: PacketSink, @unchecked Sendable {
        let name = "probe"
        private(set) var samples: [(y: UInt8, u: UInt8, v: UInt8)] = []
        func start(video: Encoder, audio: Encoder) throws(PipelineError) {}
        func write(_ packet: Packet, media: MediaType) throws(PipelineError) {}
        func finish(failure: String?) throws(PipelineError) {}
        func composed(_ canvas: Frame, tick: Int64) throws(PipelineError) {
            samples.append(canvas.yuv(atX: canvas.width / 2, y: canvas.height / 2))
        }
        static func isRed(_ p: (y: UInt8, u: UInt8, v: UInt8)) -> Bool { p.v > 200 && p.u < 120 }
    }

    @Test("a participant recorded from 1 s (keyframes 1 s apart) is seen in the re-render from 1 s, within a frame")
    func recordedJoinerIsSeenAtOnce() async throws {
        let firstRed = try await firstRedTick(joinMs: 1000, wallClockTimed: true)
        // Tick 30 is 1.000 s.
        #expect(firstRed.map { (29...31).contains($0) } == true, "first red frame: \(String(describing: firstRed)) (30 = 1 s)")
    }

    /// Tick n shows stage time n/30 s and asks its participants for what is due 1/60 s later
    /// (the frame lead): a first picture due at 1.020 s belongs to tick 31 (asked at 1.050 s),
    /// as in the live composite. A session's recordings are timed on the wall clock, so the
    /// re-render keeps that; a hand-written manifest's files (whose containers may shift video
    /// by the audio priming) show a first picture due within a frame at once.
    @Test("a re-rendered joiner's first picture comes at the frame the live composite showed it, not one early",
          arguments: [(true, 31), (false, 30)])
    func firstPictureAtItsFrame(wallClockTimed: Bool, tick: Int) async throws {
        let firstRed = try await firstRedTick(joinMs: 1020, wallClockTimed: wallClockTimed)
        #expect(firstRed == tick, "first red frame: \(String(describing: firstRed)), wall-clock timed: \(wallClockTimed)")
    }

    /// Records a 4 s clip, places it at `joinMs` on a re-rendered session's timeline and
    /// returns the first output tick whose centre is red.
    private func firstRedTick(joinMs: Int64, wallClockTimed: Bool) async throws -> Int? {
        let directory = try RecorderHarness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let clip = try RecorderHarness.clip(seconds: 4, in: directory)
        let epoch: Int64 = 1_795_694_017_000
        // The recording's media starts at stage time 1 s: its date is the epoch + 1 s.
        let (output, outcome) = try await RecorderHarness.record(file: clip, plan: { layout in
            ParticipantRecordingPlan(layout: layout, stageArn: "arn:aws:ivs:us-east-1:123456789012:stage/AbCdef1G2hij",
                                     targetSegmentDurationSeconds: 2, timestampEpochMs: epoch + 1000)
        }, in: directory)
        #expect(outcome.status == .recordingEnded)
        let session = output.root.appendingPathComponent("AbCdef1G2hij/st-ZyXwvu1T2sABC")
        let probe = try await onThread { () throws -> CentreProbe in
            var files: [String] = []
            let base = session.path + "/"
            for case let url as URL in FileManager.default.enumerator(at: session, includingPropertiesForKeys: nil)! {
                if url.path.hasPrefix(base) { files.append(String(url.path.dropFirst(base.count))) }
            }
            let recordings = try SessionRecordings.read(files: files, source: session.path) { try Data(contentsOf: session.appendingPathComponent($0)) }
            var manifest = recordings.manifest
            #expect(manifest.startedAt != nil)
            if !wallClockTimed { manifest.startedAt = nil }
            // Another participant from 0 makes the recorded one join `joinMs` in. It is on the
            // stage 40 ms before its media (as a WHIP publisher is before its first picture):
            // its tile is there, and the picture rule alone decides the frame.
            manifest.participants[0].timeline = manifest.participants[0].timeline.enumerated().map {
                StageTimelineEvent(atMs: $1.atMs + joinMs - ($0 == 0 ? 40 : 0), event: $1.event)
            }
            manifest.participants[0].mediaParts = manifest.participants[0].mediaParts?.map {
                StageMediaPart(media: $0.media, mediaOffsetMs: $0.mediaOffsetMs + joinMs)
            }
            manifest.durationMs = nil
            var logger = Logger(label: "rerender")
            logger.logLevel = .critical
            let stage = try RecordedStage.validated(manifest, directory: session, file: "session")
            let source = try RecordedStageSource(stage: stage, logger: logger)
            let probe = CentreProbe()
            let video = VideoEncoderSettings(width: 160, height: 90, frameRate: Rational(30, 1), bitrate: 300_000,
                                             keyframeInterval: 60, preset: "ultrafast")
            let settings = CompositionSettings(video: video, layout: GridLayout(configuration: GridConfiguration(gridGap: 0)), duration: .seconds(3))
            let composition = try CompositionSession(source: source, settings: settings, sinks: [probe], logger: logger)
            var pacer = AsFastAsPossiblePacer()
            _ = try composition.run(pacer: &pacer)
            return probe
        }
        return probe.samples.indices.first { CentreProbe.isRed(probe.samples[$0]) }
    }
}
