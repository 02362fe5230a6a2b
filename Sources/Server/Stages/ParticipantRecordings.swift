// Individual participant recording in the daemon: every publisher of a stage with an
// autoParticipantRecordingConfiguration is recorded on a thread of its own, from a queue of
// its media alone (LivePublisher.makeQueue: the same packets compositions get), by a
// ParticipantRecorder writing through the bucket's uploads (and S3 spool).
//
// A publisher that reconnects within `recordingReconnectWindowSeconds` continues the same
// recording (a discontinuity in its playlist). The stage side hears each change of state
// (`report`), to persist `recordingState` and send "IVS Participant Recording State Change".
import APIModels
import Destinations
import Foundation
import HLS
import LiveStage
import Logging
import ParticipantRecording
import Pipeline
import Synchronization

/// One participant's recording within one stage session.
struct ParticipantRecordingKey: Hashable, Sendable {
    var stageArn: String
    var sessionId: String
    var participantId: String
}

enum ParticipantRecordingChange: Sendable {
    /// The recording is being written (ACTIVE); also after a reconnect.
    case active(bucket: String, prefix: String, participantPrefix: String, first: Bool)
    /// The publisher left: the recording waits for it (reconnect window), then finalizes.
    case stopping
    case ended(ParticipantRecordingOutcome, bucket: String, prefix: String)
}

final class ParticipantRecordings: Sendable {
    /// A recording in progress: where a reconnecting publisher is handed over.
    private final class Running: Sendable {
        let replacement = Mutex<LivePublisher?>(nil)
        /// Set when the recording stops waiting for its publisher: later publishers start a new one.
        let closed = Atomic<Bool>(false)
    }

    private let buckets: BucketService
    private let logger: Logger
    private let report: @Sendable (ParticipantRecordingKey, ParticipantRecordingChange) -> Void
    private let running = Mutex<[ParticipantRecordingKey: Running]>([:])
    /// With nothing to record, how long a wait lasts before the keyframe wish is looked at
    /// again (a packet ends it at once).
    static let idleWait = Duration.milliseconds(100)

    init(buckets: BucketService, logger: Logger,
         report: @escaping @Sendable (ParticipantRecordingKey, ParticipantRecordingChange) -> Void) {
        self.buckets = buckets
        self.logger = logger
        self.report = report
    }

    /// Recordings in progress (for tests and metrics).
    var count: Int { running.withLock { $0.count } }

    /// A publisher of `stage` started publishing: record it (or continue its recording).
    func publisherJoined(_ publisher: LivePublisher, stageArn: String, sessionId: String, bucket: String,
                         configuration: AutoParticipantRecordingConfiguration, now: Date) {
        let key = ParticipantRecordingKey(stageArn: stageArn, sessionId: sessionId, participantId: publisher.identity.participantId)
        let continued: Bool = running.withLock { running in
            guard let existing = running[key], !existing.closed.load(ordering: .acquiring) else { return false }
            existing.replacement.withLock { $0 = publisher }
            return true
        }
        if continued {
            logger.info("participant recording continues after a reconnect", metadata: ["participant.id": "\(key.participantId)"])
            return
        }
        let stageId = IVSARN(parsing: stageArn)?.resourceID ?? "stage"
        let layout = ParticipantRecordingLayout(stageId: stageId, sessionId: sessionId, participantId: key.participantId,
                                                startedAt: now)
        var recordingPlan = Self.plan(configuration, layout: layout, stageArn: stageArn)
        recordingPlan.timestampEpochMs = publisher.wallClockEpochMs
        let plan = recordingPlan
        let state = Running()
        running.withLock { $0[key] = state }
        let window = TimeInterval(max(0, min(300, configuration.recordingReconnectWindowSeconds ?? 0)))
        var recordingLogger = logger
        recordingLogger[metadataKey: "participant.id"] = "\(key.participantId)"
        recordingLogger[metadataKey: "recording.prefix"] = "\(layout.prefix)"
        let threadLogger = recordingLogger
        let thread = Thread { [buckets, report] in
            let uploads = buckets.uploads(bucket: bucket, compositionArn: stageArn,
                                          destinationId: "participant-\(key.participantId)-\(layout.timestamp)", logger: threadLogger)
            let recorder = ParticipantRecorder(plan: plan, uploads: uploads, logger: threadLogger)
            recorder.start()
            report(key, .active(bucket: bucket, prefix: layout.prefix, participantPrefix: layout.participantPrefix, first: true))
            threadLogger.info("participant recording started")
            let failure = Self.record(publisher, recorder: recorder, state: state, window: window, key: key, bucket: bucket,
                                      layout: layout, report: report, logger: threadLogger)
            let outcome = recorder.finish(failure: failure)
            threadLogger.info("participant recording ended", metadata: [
                "status": "\(outcome.status.rawValue)", "duration_ms": "\(outcome.durationMs)", "segments": "\(outcome.segments)",
                "reason": "\(outcome.message ?? "")",
                // A publisher's configurations refused or beyond the change budget, and the media skipped for them.
                "refused_configurations": "\(outcome.refusedConfigurations)",
                "coalesced_configurations": "\(outcome.coalescedConfigurations)", "dropped_packets": "\(outcome.droppedPackets)"])
            report(key, .ended(outcome, bucket: bucket, prefix: layout.prefix))
            self.running.withLock { if $0[key] === state { $0[key] = nil } }
        }
        thread.name = "participant-recording"
        thread.start()
    }

    /// Records until the publisher is gone and no replacement came within the window; returns
    /// why it failed, if it did.
    private static func record(_ first: LivePublisher, recorder: ParticipantRecorder, state: Running, window: TimeInterval,
                               key: ParticipantRecordingKey, bucket: String, layout: ParticipantRecordingLayout,
                               report: @Sendable (ParticipantRecordingKey, ParticipantRecordingChange) -> Void,
                               logger: Logger) -> String? {
        var publisher = first
        while true {
            let queue = publisher.makeQueue()
            let source = LiveMediaSource(queue: queue, origin: 0, logger: logger)
            do {
                while try recorder.record(from: source) {
                    if recorder.takeKeyframeWish() { publisher.requestKeyframe() }
                    queue.waitForPacket(timeout: idleWait)
                }
            } catch {
                publisher.release(queue)
                state.closed.store(true, ordering: .releasing)
                return "\(error)"
            }
            publisher.release(queue)
            report(key, .stopping)
            // Wait for the participant to come back within the window.
            let deadline = Date().addingTimeInterval(window)
            var next: LivePublisher?
            while next == nil, Date() < deadline {
                next = state.replacement.withLock { replacement in
                    defer { replacement = nil }
                    return replacement
                }
                if next == nil { Thread.sleep(forTimeInterval: 0.05) }
            }
            if next == nil {
                state.closed.store(true, ordering: .releasing)
                // A publisher that arrived between the last look and closing still continues.
                next = state.replacement.withLock { replacement in
                    defer { replacement = nil }
                    return replacement
                }
            }
            guard let replacement = next else { return nil }
            publisher = replacement
            recorder.sourceReplaced()
            report(key, .active(bucket: bucket, prefix: layout.prefix, participantPrefix: layout.participantPrefix, first: false))
        }
    }

    static func plan(_ given: AutoParticipantRecordingConfiguration, layout: ParticipantRecordingLayout,
                     stageArn: String) -> ParticipantRecordingPlan {
        // The model's defaults for what the stage left out (thumbnails: DISABLED).
        let configuration = given.withDefaults()
        let mediaTypes: ParticipantRecordingPlan.MediaTypes = switch configuration.mediaTypes?.first ?? .audioVideo {
        case .audioVideo: .audioVideo
        case .audioOnly: .audioOnly
        case .none: .none
        }
        var thumbnails: ThumbnailPlan?
        if let thumbnail = configuration.thumbnailConfiguration, thumbnail.recordingMode == .interval {
            let storage = thumbnail.storage ?? [.sequential]
            thumbnails = ThumbnailPlan(intervalSeconds: thumbnail.targetIntervalSeconds ?? 60, sequential: storage.contains(.sequential),
                                       latest: storage.contains(.latest))
        }
        return ParticipantRecordingPlan(layout: layout, stageArn: stageArn, mediaTypes: mediaTypes,
                                        targetSegmentDurationSeconds: configuration.hlsConfiguration?.targetSegmentDurationSeconds ?? 6,
                                        thumbnails: thumbnails)
    }
}
