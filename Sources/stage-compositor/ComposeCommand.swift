import ArgumentParser
import AsyncHTTPClient
import Destinations
import FFmpeg
import Foundation
import HLS
import Layout
import MediaCore
import Pipeline
import Stages
import Storage
import Composition

struct ComposeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compose",
        abstract: "Compose a recorded stage into an HLS recording (the S3 destination, on local storage) and/or push it to an RTMP channel."
    )

    @Option(help: ArgumentHelp(
        "Recorded stage directory (holds manifest.json), or one stage session's individual participant recordings: a local directory or s3://bucket/<stageId>/<sessionId>.",
        discussion: "Recordings are placed on the session's timeline by their playlists' EXT-X-PROGRAM-DATE-TIME and durations "
            + "(reconnect gaps included). s3://: endpoint from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, credentials from AWS_*."))
    var stage: String

    @Option(name: .customLong("participant-attribute"),
            help: ArgumentHelp("PARTICIPANT_ID:KEY=VALUE: sets a participant attribute (repeatable), e.g. the PiP or featured attribute for a re-render: individual recordings do not carry attributes."))
    var participantAttributes: [String] = []

    @Option(help: ArgumentHelp("Direct the composition as a live one was: a recording's events/directions.json (its layouts, audio and "
                               + "attributes, placed on this stage's clock by their wall-clock times when the stage has one).",
                               valueName: "file"))
    var directions: String?

    @Option(help: ArgumentHelp("Where the image files of the stage's or --directions' overlays are (a daemon's overlays.directory, "
                               + "for a re-render of its recording); default: the stage's folder.", valueName: "folder"))
    var overlayDirectory: String?

    @Option(help: "Layout preset name (see layouts/) or LayoutConfiguration JSON file.")
    var layout: String = "grid"

    @Option(help: ArgumentHelp("Draw these overlays (labels, images, background, slate, banners): an overlay description (JSON, "
                               + "StartComposition's `overlays`); the image files it names are relative to its folder.",
                               valueName: "file"))
    var overlays: String?

    @Option(help: "Encoder WIDTHxHEIGHT@FPS:BITRATE, e.g. 1280x720@30:2500000 (k/M suffixes allowed).")
    var encoder: String = EncoderSpec.default.description

    @Option(help: "Storage root standing in for the S3 bucket.")
    var out: String = "out"

    @Option(help: ArgumentHelp("Record to an S3-compatible bucket instead of --out: http[s]://host[:port]/bucket[/key-prefix] (path style).",
                               discussion: "Credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN); region from AWS_REGION (default us-east-1)."))
    var s3: String?

    @Option(help: "Also push the composition to a channel: rtmp[s]://host[:port]/app/streamkey (reconnects with linear backoff, 5 retries).")
    var rtmp: String?

    @Flag(inversion: .prefixedNo, help: "Write the HLS recording (--no-record: channel only, needs --rtmp).")
    var record = true

    @Option(help: "realtime: pace output at wall-clock speed; fast: as fast as possible.")
    var pace: PaceMode = .fast

    @Option(help: "Target HLS segment duration in seconds (2...10).")
    var segmentDuration: Int = 2

    @Option(help: "Stop after this many seconds of output (default: the stage's length).")
    var duration: Double?

    @Option(help: "Thumbnails every N seconds: N[:sequential|latest|both] (IVS default 60:sequential); 'off' for none.")
    var thumbnails: String = "60:sequential"

    @Option(help: "x264 preset.")
    var preset: String = "veryfast"

    @Option(help: "Frame threads per video decoder (default \(DecoderLimits().videoThreads); participants are decoded side by side).")
    var decoderThreads: Int?

    @Option(help: "x264 threads (0: x264 chooses, 1.5 per core; default 1 up to 640x360, else 2).")
    var encoderThreads: Int?

    @Flag(inversion: .prefixedNo, help: "Decode participants side by side (--no-parallel-decoding: in turn on the composition thread, for comparison).")
    var parallelDecoding = true

    @Flag(help: "Decode the video of participants who are not shown (stopped, not published) too; for comparison.")
    var decodeHiddenVideo = false

    @Flag(inversion: .prefixedNo, help: "Keep unchanged tiles between frames (--no-tile-reuse: redraw every tile every frame; same output, for comparison).")
    var tileReuse = true

    @Flag(help: "Log at info level.")
    var verbose = false

    enum PaceMode: String, ExpressibleByArgument { case realtime, fast }

    func run() throws {
        try runReportingErrors {
            FFmpegLogging.setLevel(verbose ? .warning : .quiet)
            let logger = makeLogger(label: "stage-compositor.compose", verbose: verbose)
            guard (2...10).contains(segmentDuration) else {
                throw CLIFailure("--segment-duration: \(segmentDuration) is outside 2...10")
            }
            let spec: EncoderSpec
            do { spec = try EncoderSpec.parse(encoder) } catch { throw CLIFailure("--encoder: \(error)") }
            let layoutConfiguration = try LayoutResolver.resolve(layout)
            let preparedOverlays = try overlays.map { try OverlayFile.prepare($0) }
            let thumbnailPlan = try parseThumbnails(thumbnails)
            let input = try StageInput.load(stage, logger: logger)
            defer { if let directory = input.temporaryDirectory { try? FileManager.default.removeItem(at: directory) } }
            for line in input.summary { FileHandle.standardError.write(Data((line + "\n").utf8)) }
            var recordedStage = try Self.applying(participantAttributes, to: input.stage)
            if let directions { recordedStage = try Self.directed(recordedStage, by: directions) }
            var limits = DecoderLimits()
            if let decoderThreads {
                guard (1...16).contains(decoderThreads) else { throw CLIFailure("--decoder-threads: \(decoderThreads) is outside 1...16") }
                limits.videoThreads = decoderThreads
            }
            if let encoderThreads, !(0...16).contains(encoderThreads) {
                throw CLIFailure("--encoder-threads: \(encoderThreads) is outside 0...16")
            }
            let source = try RecordedStageSource(stage: recordedStage, limits: limits,
                                                 overlayAssets: overlayDirectory.map { OverlayAssets(directory: $0) }, logger: logger)

            guard record || rtmp != nil else { throw CLIFailure("--no-record needs --rtmp: there would be no output") }
            var channel: ChannelDestinationConfiguration?
            if let rtmp {
                do { channel = try ChannelDestinationConfiguration.parse(publishURL: rtmp) } catch { throw CLIFailure("--rtmp: \(error)") }
            }

            // The client outlives the composition: uploads finish before `run` returns.
            let httpClient: HTTPClient? = s3 == nil ? nil : HTTPClient(eventLoopGroupProvider: .singleton)
            defer { try? httpClient?.syncShutdown() }
            let s3Configuration = try s3.map(parseS3)
            let storage: any ObjectStorage = if let s3Configuration, let httpClient {
                S3Storage(configuration: s3Configuration, httpClient: httpClient, logger: logger)
            } else {
                LocalDirectoryStorage(rootPath: out)
            }

            let planning = ComposePlanning(stageArn: recordedStage.manifest.stageArn, layout: layoutConfiguration, encoder: spec,
                                           recording: record ? (segmentDuration, thumbnailPlan) : nil, channel: channel,
                                           overlays: preparedOverlays)
            let plan = try planning.compositionPlan(
                compositionId: makeResourceID(), uploads: { UploadQueue(storage: storage, logger: $0) }, preset: preset,
                tuning: CompositionTuning(reuseUnchangedTiles: tileReuse, encoderThreads: encoderThreads,
                                          parallelDecoding: parallelDecoding, decodeHiddenVideo: decodeHiddenVideo))
            let limit = duration.map { MediaTime.microseconds(Int64($0 * 1_000_000)) }
            let runner = try CompositionRunner(plan: plan, source: source, duration: limit, logger: logger,
                                               channelEvents: { event in
                FileHandle.standardError.write(Data("\nchannel: \(event)\n".utf8))
            })
            let progress = ProgressLine(enabled: stderrIsTerminal())
            let result: CompositionResult
            if pace == .realtime {
                var pacer = RealtimePacer()
                result = try runner.session.run(pacer: &pacer, progress: progress.update)
            } else {
                var pacer = AsFastAsPossiblePacer()
                result = try runner.session.run(pacer: &pacer, progress: progress.update)
            }
            progress.finish(result)
            let root = URL(fileURLWithPath: out).standardizedFileURL
            if let sink = runner.recordingSink {
                print(s3Configuration?.displayURL(forKey: sink.multivariantPlaylistKey)
                      ?? root.appendingPathComponent(sink.multivariantPlaylistKey).path)
            }
            if let failure = result.failedSinks.sorted(by: { $0.key < $1.key }).first {
                throw CLIFailure("\(failure.key) failed: \(failure.value)")
            }
        }
    }
}

extension ComposeCommand {
    /// The stage directed by a recording's `events/directions.json`: each change at its
    /// wall-clock time on this stage's clock (when both know it), else at its own time; a
    /// change from before the stage began applies at its start.
    static func directed(_ stage: RecordedStage, by path: String) throws -> RecordedStage {
        let record: DirectionsRecord
        do {
            record = try JSONDecoder().decode(DirectionsRecord.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw CLIFailure("--directions \(path): not a directions record (events/directions.json): \(error)")
        }
        var manifest = stage.manifest
        manifest.directions = record.directions(onStageStartedAtMs: manifest.startedAtMs).map { direction in
            var moved = direction
            moved.atMs = max(0, direction.atMs)
            return moved
        }
        do {
            return try RecordedStage.validated(manifest, directory: stage.directory, file: path)
        } catch {
            throw CLIFailure("--directions: \(error)")
        }
    }

    /// The stage with `PARTICIPANT_ID:KEY=VALUE` attributes set.
    static func applying(_ assignments: [String], to stage: RecordedStage) throws -> RecordedStage {
        guard !assignments.isEmpty else { return stage }
        var manifest = stage.manifest
        for assignment in assignments {
            guard let colon = assignment.firstIndex(of: ":"), let equals = assignment[colon...].firstIndex(of: "=") else {
                throw CLIFailure("--participant-attribute: '\(assignment)' is not PARTICIPANT_ID:KEY=VALUE")
            }
            let participantId = String(assignment[..<colon])
            let key = String(assignment[assignment.index(after: colon)..<equals])
            guard !key.isEmpty, let index = manifest.participants.firstIndex(where: { $0.participantId == participantId }) else {
                let known = manifest.participants.map(\.participantId).joined(separator: ", ")
                throw CLIFailure("--participant-attribute: no participant '\(participantId)' in this stage (it has: \(known))")
            }
            manifest.participants[index].attributes[key] = String(assignment[assignment.index(after: equals)...])
        }
        return RecordedStage(directory: stage.directory, manifest: manifest)
    }
}

/// `N[:sequential|latest|both]` or `off`; N within the model's 1...86400.
func parseThumbnails(_ text: String) throws -> ThumbnailPlan? {
    if text == "off" { return nil }
    let parts = text.split(separator: ":")
    guard let first = parts.first, let seconds = Int(first), (1...86_400).contains(seconds), parts.count <= 2 else {
        throw CLIFailure("--thumbnails: '\(text)' is not N[:sequential|latest|both] with N in 1...86400, or off")
    }
    switch parts.count == 2 ? String(parts[1]) : "sequential" {
    case "sequential": return ThumbnailPlan(intervalSeconds: seconds, sequential: true, latest: false)
    case "latest": return ThumbnailPlan(intervalSeconds: seconds, sequential: false, latest: true)
    case "both": return ThumbnailPlan(intervalSeconds: seconds, sequential: true, latest: true)
    default: throw CLIFailure("--thumbnails: storage must be sequential, latest or both")
    }
}

/// "composed 12.3s  312 frames  95.1 fps  3.17x  publishers 4  lagged 0" on one terminal line, updated ~4 times a second.
final class ProgressLine {
    private let enabled: Bool
    private let started = Date()
    private var lastPrint = Date.distantPast

    init(enabled: Bool) { self.enabled = enabled }

    func update(_ progress: CompositionProgress) {
        guard enabled else { return }
        let now = Date()
        guard now.timeIntervalSince(lastPrint) >= 0.25 else { return }
        lastPrint = now
        let elapsed = max(now.timeIntervalSince(started), 0.001)
        let composed = Double(progress.composed.microsecondsValue) / 1_000_000
        let line = String(format: "\rcomposed %.1fs  %lld frames  %.1f fps  %.2fx  publishers %d  lagged %lld ",
                          composed, progress.frames, Double(progress.frames) / elapsed, composed / elapsed, progress.publishers,
                          progress.laggedFrames)
        FileHandle.standardError.write(Data(line.utf8))
    }

    func finish(_ result: CompositionResult) {
        let elapsed = max(Date().timeIntervalSince(started), 0.001)
        let composed = Double(result.duration.microsecondsValue) / 1_000_000
        // Lagged: frames repeated because composing fell behind the clock (real-time pace only).
        let line = String(format: "%@composed %.3fs (%lld frames) in %.2fs, %.2fx real time, %lld lagged frames\n",
                          enabled ? "\r" : "", composed, result.frames, elapsed, composed / elapsed, result.laggedFrames)
        FileHandle.standardError.write(Data(line.utf8))
    }
}

/// `--s3 URL` plus the AWS_* environment variables.
private func parseS3(_ text: String) throws -> S3StorageConfiguration {
    let environment = ProcessInfo.processInfo.environment
    guard let accessKeyId = environment["AWS_ACCESS_KEY_ID"], let secret = environment["AWS_SECRET_ACCESS_KEY"] else {
        throw CLIFailure("--s3 needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment")
    }
    guard let url = URL(string: text),
          let configuration = S3StorageConfiguration(bucketURL: url, region: environment["AWS_REGION"] ?? "us-east-1",
                                                     accessKeyId: accessKeyId, secretAccessKey: secret,
                                                     sessionToken: environment["AWS_SESSION_TOKEN"]) else {
        throw CLIFailure("--s3: '\(text)' is not http[s]://host[:port]/bucket[/key-prefix]")
    }
    return configuration
}
