import Foundation
import Testing
@testable import Stages

/// Writes `manifest` (and small placeholder media files) into a fresh temp stage directory.
func makeStage(_ manifest: String, media: [String] = []) throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stage-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try Data(manifest.utf8).write(to: directory.appendingPathComponent("manifest.json"))
    for path in media {
        let url = directory.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("media".utf8).write(to: url)
    }
    return directory
}

/// Loads `manifest` from a temp directory and returns the error (nil when it loads).
func loadError(_ manifest: String, media: [String] = ["a.mp4", "b.mp4"]) throws -> StageError? {
    let directory = try makeStage(manifest, media: media)
    defer { try? FileManager.default.removeItem(at: directory) }
    do {
        _ = try RecordedStage.load(from: directory.path)
        return nil
    } catch {
        #expect(error.file.hasPrefix(directory.standardizedFileURL.path))
        return error
    }
}

let arn = "arn:aws:ivs:us-east-1:123456789012:stage/abcDEF123"

/// A manifest with participants given as JSON fragments.
func manifest(durationMs: String? = "6000", _ participants: String...) -> String {
    let duration = durationMs.map { "\"durationMs\": \($0)," } ?? ""
    return "{\"stageArn\": \"\(arn)\", \(duration) \"participants\": [\(participants.joined(separator: ","))]}"
}

func participant(_ id: String = "p0", media: String? = "a.mp4", extra: String = "",
                 timeline: String = #"[{"atMs": 0, "event": "publish"}]"#) -> String {
    let mediaField = media.map { "\"media\": \"\($0)\"," } ?? ""
    return "{\"participantId\": \"\(id)\", \"userId\": \"u\", \(mediaField) \(extra) \"timeline\": \(timeline)}"
}

@Suite struct StageManifestValidationTests {
    @Test func validManifestLoads() throws {
        let text = manifest(participant("p0"), participant("p1", media: "b.mp4", extra: #""mediaOffsetMs": 250, "attributes": {"isFeatured": "true"},"#,
                                                   timeline: #"[{"atMs": 500, "event": "publish"}, {"atMs": 1000, "event": "videoStopped"}, {"atMs": 2000, "event": "videoStarted"}, {"atMs": 2500, "event": "audioMuted"}, {"atMs": 3000, "event": "unpublish"}, {"atMs": 4000, "event": "publish"}]"#))
        let directory = try makeStage(text, media: ["a.mp4", "b.mp4"])
        defer { try? FileManager.default.removeItem(at: directory) }
        let stage = try RecordedStage.load(from: directory.path)
        #expect(stage.manifest.participants.count == 2)
        #expect(stage.manifest.stageId == "abcDEF123")
        let p1 = stage.manifest.participants[1]
        #expect(p1.attributes == ["isFeatured": "true"])
        #expect(p1.resolvedMediaOffsetMs == 250)
        #expect(p1.mediaOffset == .milliseconds(250))
        #expect(stage.manifest.participants[0].resolvedMediaOffsetMs == 0)
        #expect(p1.state(atMs: 1500) == PublicationState(isPublished: true, isVideoStopped: true, isAudioMuted: false, firstPublishMs: 500))
        #expect(p1.state(atMs: 2700).isAudioMuted)
        #expect(!p1.state(atMs: 3500).isPublished)
        #expect(!p1.state(atMs: 4000).isAudioMuted) // unpublish reset the mute
        #expect(stage.mediaPath(for: p1) == directory.appendingPathComponent("b.mp4").standardizedFileURL.path)
    }

    @Test func unknownEventNameNamesTheField() throws {
        let error = try #require(try loadError(manifest(participant(timeline: #"[{"atMs": 0, "event": "publish"}, {"atMs": 10, "event": "dance"}]"#))))
        #expect(error.field == "participants[0].timeline[1].event")
        #expect(error.message.contains("unknown event 'dance'"))
        #expect(error.message.contains("videoStopped"))
        #expect(error.description.contains("manifest.json: participants[0].timeline[1].event: "))
    }

    @Test func unknownFieldIsRejected() throws {
        let error = try #require(try loadError(manifest(participant(extra: #""mediaOffsetMS": 5,"#))))
        #expect(error.field == "participants[0].mediaOffsetMS")
        #expect(error.message.contains("unknown field"))
        let top = try #require(try loadError(#"{"stageArn": "\#(arn)", "duration": 5, "participants": []}"#))
        #expect(top.field == "duration")
        let event = try #require(try loadError(manifest(participant(timeline: #"[{"atMs": 0, "event": "publish", "at": 1}]"#))))
        #expect(event.field == "participants[0].timeline[0].at")
    }

    @Test func missingAndMistypedFields() throws {
        let missing = try #require(try loadError(manifest(#"{"participantId": "p0", "media": "a.mp4"}"#)))
        #expect(missing.field == "participants[0].timeline")
        #expect(missing.message == "required field is missing")
        let mistyped = try #require(try loadError(manifest(participant(timeline: #"[{"atMs": "zero", "event": "publish"}]"#))))
        #expect(mistyped.field == "participants[0].timeline[0].atMs")
        let notJSON = try #require(try loadError("{ nope"))
        #expect(notJSON.file.hasSuffix("manifest.json"))
    }

    @Test func duplicateParticipantIds() throws {
        let error = try #require(try loadError(manifest(participant("p0"), participant("p0", media: "b.mp4"))))
        #expect(error.field == "participants[1].participantId")
        #expect(error.message.contains("duplicate participantId 'p0'"))
        let empty = try #require(try loadError(manifest(participant(""))))
        #expect(empty.field == "participants[0].participantId")
    }

    @Test("times beyond a week (which microseconds could overflow) name their field")
    func hugeTimes() throws {
        let huge = "9223372036854775807"
        let duration = try #require(try loadError(manifest(durationMs: huge, participant())))
        #expect(duration.field == "durationMs")
        let at = try #require(try loadError(manifest(durationMs: nil, participant(timeline: "[{\"atMs\": \(huge), \"event\": \"publish\"}]"))))
        #expect(at.field == "participants[0].timeline[0].atMs")
        let offset = try #require(try loadError(manifest(participant(extra: "\"mediaOffsetMs\": -\(huge),"))))
        #expect(offset.field == "participants[0].mediaOffsetMs")
        #expect(try loadError(manifest(durationMs: "604800000", participant())) == nil)
    }

    @Test func timeOrderAndNegativeTimes() throws {
        let order = try #require(try loadError(manifest(participant(timeline: #"[{"atMs": 500, "event": "publish"}, {"atMs": 100, "event": "unpublish"}]"#))))
        #expect(order.field == "participants[0].timeline[1].atMs")
        #expect(order.message.contains("time order"))
        let negative = try #require(try loadError(manifest(participant(timeline: #"[{"atMs": -1, "event": "publish"}]"#))))
        #expect(negative.field == "participants[0].timeline[0].atMs")
        let late = try #require(try loadError(manifest(participant(timeline: #"[{"atMs": 0, "event": "publish"}, {"atMs": 6001, "event": "unpublish"}]"#))))
        #expect(late.field == "participants[0].timeline[1].atMs")
        #expect(late.message.contains("after the end of the stage"))
        // Equal times are fine (applied in array order).
        #expect(try loadError(manifest(participant(timeline: #"[{"atMs": 0, "event": "publish"}, {"atMs": 0, "event": "videoStopped"}]"#))) == nil)
    }

    @Test(arguments: [
        (#"[{"atMs": 0, "event": "videoStopped"}]"#, 0, "not published"),
        (#"[{"atMs": 0, "event": "publish"}, {"atMs": 5, "event": "publish"}]"#, 1, "already published"),
        (#"[{"atMs": 0, "event": "unpublish"}]"#, 0, "not published"),
        (#"[{"atMs": 0, "event": "publish"}, {"atMs": 5, "event": "videoStarted"}]"#, 1, "video was not stopped"),
        (#"[{"atMs": 0, "event": "publish"}, {"atMs": 1, "event": "audioMuted"}, {"atMs": 2, "event": "audioMuted"}]"#, 2, "audio already muted"),
        (#"[{"atMs": 0, "event": "publish"}, {"atMs": 1, "event": "audioUnmuted"}]"#, 1, "audio was not muted"),
        (#"[{"atMs": 0, "event": "publish"}, {"atMs": 1, "event": "unpublish"}, {"atMs": 2, "event": "audioMuted"}]"#, 2, "not published"),
    ])
    func eventsMustFitTheState(timeline: String, index: Int, problem: String) throws {
        let error = try #require(try loadError(manifest(participant(timeline: timeline))))
        #expect(error.field == "participants[0].timeline[\(index)].event")
        #expect(error.message.contains(problem))
    }

    @Test func durationMustBePositive() throws {
        for value in ["0", "-5"] {
            let error = try #require(try loadError(manifest(durationMs: value, participant())))
            #expect(error.field == "durationMs")
            #expect(error.message == "must be greater than 0")
        }
        // Absent is fine when someone participates.
        #expect(try loadError(manifest(durationMs: nil, participant())) == nil)
    }

    @Test func atMostTwelveParticipants() throws {
        let twelve = (0..<12).map { participant("p\($0)") }
        #expect(try loadError("{\"stageArn\": \"\(arn)\", \"participants\": [\(twelve.joined(separator: ","))]}") == nil)
        let thirteen = (0..<13).map { participant("p\($0)") }
        let error = try #require(try loadError("{\"stageArn\": \"\(arn)\", \"participants\": [\(thirteen.joined(separator: ","))]}"))
        #expect(error.field == "participants")
        #expect(error.message.contains("at most 12"))
    }

    @Test func emptyStageNeedsADuration() throws {
        #expect(try loadError(manifest(durationMs: "3000")) == nil)
        let error = try #require(try loadError(manifest(durationMs: nil)))
        #expect(error.field == "durationMs")
        #expect(error.message.contains("no participants"))
    }

    @Test func stageArnIsChecked() throws {
        let error = try #require(try loadError(#"{"stageArn": "arn:aws:ivs:us-east-1:1:channel/x", "participants": []}"#))
        #expect(error.field == "stageArn")
    }

    @Test(arguments: [
        ("/etc/passwd", "absolute"), ("../outside.mp4", "leaves the stage directory"),
        ("a/../../outside.mp4", "leaves the stage directory"), ("~/x.mp4", "'~'"), (#"a\\b.mp4"#, "backslash"),
        ("", "is empty"), (".", "stage directory itself"), ("media/", "directory"),
    ])
    func mediaMustStayInsideTheStage(path: String, problem: String) throws {
        let error = try #require(try loadError(manifest(participant(media: path))))
        #expect(error.field == "participants[0].media")
        #expect(error.message.contains(problem))
    }

    @Test func mediaPathsThatStayInsideAreFine() throws {
        #expect(try loadError(manifest(participant(media: "sub/../a.mp4"))) == nil)
        #expect(try loadError(manifest(participant(media: "./a.mp4"))) == nil)
        #expect(try loadError(manifest(participant(media: "p1/media/hls/multivariant.m3u8")), media: ["p1/media/hls/multivariant.m3u8"]) == nil)
        #expect(try loadError(manifest(participant(media: nil))) == nil) // no media: nothing to check
    }

    @Test func mediaMustExistAndBeAFile() throws {
        let missing = try #require(try loadError(manifest(participant(media: "nope.mp4"))))
        #expect(missing.field == "participants[0].media")
        #expect(missing.message.contains("does not exist"))
        let folder = try #require(try loadError(manifest(participant(media: "sub")), media: ["sub/x.mp4"]))
        #expect(folder.message.contains("is a directory"))
    }

    @Test func missingDirectoryAndManifest() throws {
        #expect(throws: StageError.self) { try RecordedStage.load(from: "/nonexistent/stage-\(UUID().uuidString)") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stage-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(throws: StageError(file: directory.appendingPathComponent("manifest.json").standardizedFileURL.path,
                                   message: "cannot read manifest (missing)")) {
            try RecordedStage.load(from: directory.path)
        }
    }
}

@Suite struct StageDirectionsValidationTests {
    static func withDirections(_ directions: String) -> String {
        "{\"stageArn\": \"\(arn)\", \"durationMs\": 6000, \"participants\": [\(participant())], \"directions\": \(directions)}"
    }

    @Test func validDirectionsLoad() throws {
        let directions = #"[{"atMs": 0, "layout": {"grid": {"gridGap": 0}}}, {"atMs": 500, "layout": {"pip": {}}, "transitionMs": 300}, {"atMs": 900, "attributes": {"p0": {"featured": "true"}}, "audio": {"p0": {"gain": 0.5}}}, {"atMs": 1000, "overlays": {"banners": [{"id": "title", "text": "Live"}]}}, {"atMs": 1200, "overlays": {}}]"#
        #expect(try loadError(Self.withDirections(directions)) == nil)
    }

    @Test("directions: time order, a week at most, layouts and overlays as StartComposition checks them, transitions, gains, attributes, unknown fields",
          arguments: [
            (#"[{"atMs": 500}, {"atMs": 400}]"#, "directions[1].atMs", "directions must be in time order (400 after 500)"),
            (#"[{"atMs": -1}]"#, "directions[0].atMs", "-1 is not between 0 and a week (604800000 ms)"),
            (#"[{"atMs": 0, "layout": {"pip": {"pipWidth": 0}}}]"#, "directions[0].layout.pip.pipWidth", "must be at least 1 (got 0)"),
            (#"[{"atMs": 0, "layout": {"grid": {}}, "transitionMs": 5000}]"#, "directions[0].transitionMs", "must be between 0 and 2000 (got 5000)"),
            (#"[{"atMs": 0, "audio": {"p0": {"gain": 9}}}]"#, "directions[0].audio.p0.gain", "must be between 0 and 2 (got 9.0)"),
            (#"[{"atMs": 0}, {"atMs": 10, "overlays": {"images": [{"file": "../logo.png"}]}}]"#, "directions[1].overlays.images[0].file",
             "'../logo.png' must not contain a .. component"),
          ])
    func invalidDirections(directions: String, field: String, message: String) throws {
        let error = try #require(try loadError(Self.withDirections(directions)))
        #expect(error.field == field)
        #expect(error.message == message)
    }

    @Test func aDirectionsTypoIsNamed() throws {
        let error = try #require(try loadError(Self.withDirections(#"[{"atMs": 0, "layuot": {}}]"#)))
        #expect(error.description.contains("layuot") && error.description.contains("unknown field"), "\(error)")
    }
}
