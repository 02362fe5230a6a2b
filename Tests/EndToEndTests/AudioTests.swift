// The mix as heard: each publisher's tone while they publish unmuted and only then, silence
// once everyone left, and audio/video agreeing on joins and leaves within 40 ms.
import Foundation
import Layout
import MediaCore
import Stages
import Testing

/// Amplitudes (full scale 1.0; the fixtures' sines are 1/8) that count as a tone present or
/// absent in a 100 ms window of the mono downmix.
let tonePresent = 0.02
let toneAbsent = 0.004

extension StageManifest {
    /// Stage-time intervals (ms) during which the participant is published and not muted.
    func audibleIntervals(of participantId: String, until endMs: Int64) -> [Range<Int64>] {
        guard let participant = participants.first(where: { $0.participantId == participantId }) else { return [] }
        var intervals: [Range<Int64>] = []
        var start: Int64?
        let changes = Set(participant.timeline.map(\.atMs) + [endMs]).sorted()
        for at in [Int64(0)] + changes {
            let state = participant.state(atMs: at)
            let audible = at < endMs && state.isPublished && !state.isAudioMuted
            if audible, start == nil { start = at }
            if !audible, let from = start { intervals.append(from..<at); start = nil }
        }
        if let from = start { intervals.append(from..<endMs) }
        return intervals
    }
}

@Suite("Audio")
struct AudioTests {
    /// two-people's media on a new timeline: p0 mutes 1000–1500 ms and leaves at 3000, p1
    /// publishes 500–2500; the stage lasts 4000 ms, so its last second has nobody.
    static let everyoneLeaves: ComposeRequest = {
        let manifest = """
        {
          "stageArn": "arn:aws:ivs:us-east-1:123456789012:stage/everyone-leaves",
          "durationMs": 4000,
          "participants": [
            { "participantId": "p0", "userId": "red", "attributes": { "color": "red", "toneHz": "300" },
              "media": "p0-red.mp4",
              "timeline": [{ "atMs": 0, "event": "publish" }, { "atMs": 1000, "event": "audioMuted" },
                           { "atMs": 1500, "event": "audioUnmuted" }, { "atMs": 3000, "event": "unpublish" }] },
            { "participantId": "p1", "userId": "green", "attributes": { "color": "green", "toneHz": "450" },
              "media": "p1-green.mp4",
              "timeline": [{ "atMs": 500, "event": "publish" }, { "atMs": 2500, "event": "unpublish" }] }
          ]
        }
        """
        // Only local file writes; a failure here is a broken test machine.
        let directory = try! makeStage(named: "everyone-leaves", manifest: manifest, linkingMediaFrom: "two-people",
                                       files: ["p0-red.mp4", "p1-green.mp4"])
        return ComposeRequest(stageDirectory: directory)
    }()

    @Test("each publisher's tone is present exactly while they publish unmuted",
          arguments: [SharedOutputs.twoPeople, SharedOutputs.fourGrid, AudioTests.everyoneLeaves])
    func tonesFollowTheTimeline(request: ComposeRequest) async throws {
        let recording = try await SharedOutputs.shared.recording(request)
        let audio = try await SharedOutputs.shared.audio(of: recording)
        let endMs = recording.result.duration.millisecondsValue
        #expect(audio.endSeconds >= Double(endMs) / 1000 - 0.03, "audio ends at \(audio.endSeconds) s")
        var problems: [String] = []
        var checkedPresent = 0, checkedAbsent = 0
        for participant in recording.manifest.participants {
            let hz = try #require(recording.model.toneHz(of: participant.participantId))
            let audible = recording.manifest.audibleIntervals(of: participant.participantId, until: endMs)
            // 100 ms windows every 50 ms, kept 60 ms clear of any change of state.
            var startMs: Int64 = 0
            while startMs + 100 <= endMs {
                let window = startMs..<(startMs + 100)
                defer { startMs += 50 }
                let inside = audible.contains { $0.lowerBound + 60 <= window.lowerBound && window.upperBound + 60 <= $0.upperBound }
                let outside = audible.allSatisfy { window.upperBound + 60 <= $0.lowerBound || $0.upperBound + 60 <= window.lowerBound }
                guard inside || outside else { continue }
                let amplitude = audio.toneAmplitude(hz, from: Double(window.lowerBound) / 1000, to: Double(window.upperBound) / 1000)
                if inside {
                    checkedPresent += 1
                    if amplitude < tonePresent { problems.append("\(participant.participantId) \(Int(hz)) Hz missing at \(window): \(amplitude)") }
                } else {
                    checkedAbsent += 1
                    if amplitude > toneAbsent { problems.append("\(participant.participantId) \(Int(hz)) Hz audible at \(window): \(amplitude)") }
                }
            }
        }
        #expect(checkedPresent > 0)
        #expect(problems.isEmpty, "\(problems.count) of \(checkedPresent + checkedAbsent) windows wrong:\n\(problems.prefix(15).joined(separator: "\n"))")
    }

    @Test("muted participant is absent while muted (four-grid p2, 2000–4000 ms)")
    func mutedParticipantIsSilent() async throws {
        let recording = try await SharedOutputs.shared.recording(SharedOutputs.fourGrid)
        let audio = try await SharedOutputs.shared.audio(of: recording)
        let before = audio.toneAmplitude(600, from: 1.5, to: 1.9)
        let muted = audio.toneAmplitude(600, from: 2.1, to: 3.9)
        let after = audio.toneAmplitude(600, from: 4.1, to: 4.5)
        #expect(before > tonePresent, "600 Hz before muting: \(before)")
        #expect(muted < toneAbsent, "600 Hz while muted: \(muted)")
        #expect(after > tonePresent, "600 Hz after unmuting: \(after)")
        // Others go on meanwhile.
        #expect(audio.toneAmplitude(300, from: 2.1, to: 3.9) > tonePresent)
    }

    @Test("silence after everyone has left")
    func silenceAfterEveryoneLeft() async throws {
        let recording = try await SharedOutputs.shared.recording(AudioTests.everyoneLeaves)
        let audio = try await SharedOutputs.shared.audio(of: recording)
        let busy = audio.rms(from: 2.0, to: 2.4)
        let empty = audio.rms(from: 3.05, to: 4.0)
        #expect(busy > 0.02, "rms while two publish: \(busy)")
        #expect(empty < 0.001, "rms after everyone left: \(empty)")
        #expect(audio.endSeconds > 3.9, "audio must go on (silent) to the end, ends at \(audio.endSeconds)")
    }

    /// A join or leave and the participant whose tile and tone appear/disappear.
    struct SyncEvent: Sendable, CustomTestStringConvertible {
        var request: ComposeRequest
        var participantId: String
        var atMs: Int64
        var isJoin: Bool
        var testDescription: String {
            "\(URL(fileURLWithPath: request.stageDirectory).lastPathComponent): \(participantId) \(isJoin ? "joins" : "leaves") at \(atMs) ms"
        }
    }

    static let syncEvents: [SyncEvent] = [
        SyncEvent(request: SharedOutputs.twoPeople, participantId: "p0", atMs: 0, isJoin: true),
        SyncEvent(request: SharedOutputs.twoPeople, participantId: "p1", atMs: 500, isJoin: true),
        SyncEvent(request: SharedOutputs.twoPeople, participantId: "p1", atMs: 4000, isJoin: false),
        SyncEvent(request: SharedOutputs.fourGrid, participantId: "p3", atMs: 2000, isJoin: true),
        SyncEvent(request: AudioTests.everyoneLeaves, participantId: "p1", atMs: 2500, isJoin: false),
        SyncEvent(request: AudioTests.everyoneLeaves, participantId: "p0", atMs: 3000, isJoin: false),
    ]

    @Test("A/V sync: a participant's picture and tone start and stop within 40 ms of each other", arguments: syncEvents)
    func avSync(event: SyncEvent) async throws {
        let recording = try await SharedOutputs.shared.recording(event.request)
        let video = try await SharedOutputs.shared.video(of: recording)
        let audio = try await SharedOutputs.shared.audio(of: recording)
        let model = recording.model
        let colour = try #require(model.colourName(of: event.participantId))
        let hz = try #require(model.toneHz(of: event.participantId))
        // The tile where the participant is (after a join / before a leave).
        let probeMs = event.isJoin ? event.atMs + 200 : event.atMs - 200
        let tile = try #require(model.tiles(atMs: probeMs).first { $0.participantId == event.participantId })

        // Video: first frame in ±300 ms whose tile centre turns to (join) / away from (leave) the colour.
        let firstFrame = max(0, recording.frame(atOrAfterMs: event.atMs - 300))
        let lastFrame = min(video.frameCount - 1, recording.frame(atOrAfterMs: event.atMs + 300))
        let switchFrame = (firstFrame...lastFrame).first { frame in
            let shows = Palette.nearest(video.colour(frame: frame, atCentreOf: tile.rect)) == colour
            return event.isJoin ? shows : !shows
        }
        let frame = try #require(switchFrame, "the tile never \(event.isJoin ? "showed" : "lost") \(colour)")
        let videoSeconds = Double(recording.milliseconds(ofFrame: frame)) / 1000

        // Audio: where the tone crosses half its steady level.
        let at = Double(event.atMs) / 1000
        let steady = event.isJoin ? audio.toneAmplitude(hz, from: at + 0.1, to: at + 0.3)
                                  : audio.toneAmplitude(hz, from: at - 0.3, to: at - 0.1)
        #expect(steady > tonePresent, "steady \(Int(hz)) Hz level \(steady)")
        let crossing = audio.crossing(of: hz, threshold: steady / 2, rising: event.isJoin,
                                      from: max(audio.startSeconds + 0.005, at - 0.3), to: at + 0.3)
        let audioSeconds = try #require(crossing, "the \(Int(hz)) Hz tone never \(event.isJoin ? "started" : "stopped")")

        #expect(abs(videoSeconds - at) <= recording.frameDurationSeconds, "picture changed at \(videoSeconds) s for an event at \(at) s")
        #expect(abs(audioSeconds - at) < 0.040, "tone changed at \(audioSeconds) s for an event at \(at) s")
        #expect(abs(videoSeconds - audioSeconds) < 0.040, "A/V offset \(Int((audioSeconds - videoSeconds) * 1000)) ms")
    }

    @Test("A/V sync at the end: audio and video streams end together")
    func streamsEndTogether() async throws {
        for request in [SharedOutputs.twoPeople, SharedOutputs.fourGrid] {
            let recording = try await SharedOutputs.shared.recording(request)
            let video = try await SharedOutputs.shared.video(of: recording)
            let audio = try await SharedOutputs.shared.audio(of: recording)
            let videoEnd = Double(video.frameCount) * recording.frameDurationSeconds
            #expect(abs(audio.endSeconds - videoEnd) < 0.040, "audio ends at \(audio.endSeconds) s, video at \(videoEnd) s")
            #expect(abs(audio.startSeconds) < 0.040, "audio starts at \(audio.startSeconds) s relative to the first frame")
            // p0 publishes to the end: its tone is there in the last 100 ms.
            #expect(audio.toneAmplitude(300, from: videoEnd - 0.1, to: videoEnd) > tonePresent)
        }
    }
}
