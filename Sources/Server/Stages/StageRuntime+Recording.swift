// Individual participant recording on the stage runtime: a publisher of a stage with
// autoParticipantRecordingConfiguration is recorded (ParticipantRecordings does the media);
// its recording fields live in the ledger and are merged into its stored record; a recording
// a dead run left is finalized at restart. Changes come back through the inbox.
import APIModels
import Foundation
import LiveStage
import Logging
import Persistence

extension StageRuntime {
    /// Starts recording individual participants (once, at start-up).
    public func enableParticipantRecording(buckets: BucketService) {
        self.buckets = buckets
        recordings = ParticipantRecordings(buckets: buckets, logger: logger) { [weak self] key, change in
            // Through the inbox, in order with the publishers' joins and leaves.
            self?.report(.recordingChanged(key, change))
        }
    }

    /// A publisher on a stage with autoParticipantRecordingConfiguration: record it.
    func startRecording(_ publisher: LivePublisher, stage: Stage, logger requestLogger: Logger) async {
        let stageArn = stage.arn
        guard let recordings, let configuration = stage.autoParticipantRecordingConfiguration,
              !configuration.storageConfigurationArn.isEmpty, let sessionId = book.activeSession(stageArn: stageArn) else { return }
        let key = ParticipantRecordingKey(stageArn: stageArn, sessionId: sessionId, participantId: publisher.identity.participantId)
        let bucket: String?
        do { bucket = try await store.storageConfiguration(arn: configuration.storageConfigurationArn)?.s3?.bucketName } catch {
            bucket = nil
        }
        guard let bucket, isConfigured(bucket: bucket) else {
            requestLogger.error("participant recording cannot start: no such storage configuration or bucket",
                                metadata: ["storage.arn": "\(configuration.storageConfigurationArn)"])
            ledger.recordingFailedToStart(key, bucket: bucket ?? "")
            await saveRecordingFields(key)
            await events.publish(builder.participantRecording(.recordingStartFailure, stageArn: stageArn, sessionId: sessionId,
                                                              participantId: key.participantId, bucket: bucket ?? "", keyPrefix: ""))
            return
        }
        ledger.recordingStarting(key, bucket: bucket)
        await saveRecordingFields(key)
        recordings.publisherJoined(publisher, stageArn: stageArn, sessionId: sessionId, bucket: bucket, configuration: configuration,
                                   now: wallClock())
    }

    private func isConfigured(bucket: String) -> Bool { configuration.buckets[bucket] != nil }

    /// A recording the previous run was writing when it died: its playlist rebuilt as VOD from
    /// the stored segments, recording-failed.json, FAILED on the participant, and the event.
    func recoverRecording(_ stored: StoredParticipant, restartedAt: Date) async {
        var updated = stored
        updated.participant.recordingState = .failed
        let bucket = stored.participant.recordingS3BucketName ?? ""
        let participantId = stored.participant.participantId ?? ""
        var durationMs: Int64 = 0
        if let prefix = stored.recordingPrefix, let storage = buckets?.storage(bucket: bucket) {
            do {
                let result = try await ParticipantRecordingRecovery.finalize(prefix: prefix, storage: storage, stageArn: stored.stageArn,
                                                                             restartedAt: restartedAt,
                                                                             reason: "the daemon stopped while recording", logger: logger)
                durationMs = result.durationMs
                logger.notice("participant recording finalized after a restart", metadata: [
                    "participant.id": "\(participantId)", "recording.prefix": "\(prefix)", "segments": "\(result.segments)",
                    "duration_ms": "\(result.durationMs)"])
            } catch {
                logger.error("participant recording could not be finalized", metadata: ["recording.prefix": "\(prefix)", "error": "\(error)"])
            }
        }
        do { try await store.putParticipant(updated) } catch {
            logger.error("participant recording state could not be persisted", metadata: ["error": "\(error)"])
        }
        await events.publish(builder.participantRecording(.recordingEndFailure, stageArn: stored.stageArn, sessionId: stored.sessionId,
                                                          participantId: participantId, bucket: bucket,
                                                          keyPrefix: stored.recordingPrefix ?? "", durationMs: durationMs))
    }

    /// A recording's state changed: persisted on the participant, and the event sent.
    func recordingChanged(_ key: ParticipantRecordingKey, _ change: ParticipantRecordingChange) async {
        switch change {
        case .active(let bucket, let prefix, let participantPrefix, let first):
            ledger.recordingActive(key, bucket: bucket, prefix: prefix, participantPrefix: participantPrefix)
            await saveRecordingFields(key)
            if first {
                await events.publish(builder.participantRecording(.recordingStart, stageArn: key.stageArn, sessionId: key.sessionId,
                                                                  participantId: key.participantId, bucket: bucket, keyPrefix: prefix))
            }
        case .stopping:
            ledger.recordingStopping(key)
            await saveRecordingFields(key)
        case .ended(let outcome, let bucket, let prefix):
            let failed = outcome.status == .recordingEndedWithFailure
            ledger.recordingEnded(key, failed: failed, bucket: bucket)
            await saveRecordingFields(key)
            await events.publish(builder.participantRecording(failed ? .recordingEndFailure : .recordingEnd, stageArn: key.stageArn,
                                                              sessionId: key.sessionId, participantId: key.participantId,
                                                              bucket: bucket, keyPrefix: prefix, durationMs: outcome.durationMs))
        }
    }

    func saveRecordingFields(_ key: ParticipantRecordingKey) async {
        do {
            // Read and written back in turn with the participant's other writes: a read made
            // before a leave was stored must not be written back after it (PostgreSQL runs the
            // actor's overlapping store calls on different connections).
            try await inOrder(key) {
                guard var stored = try await store.participant(stageArn: key.stageArn, sessionId: key.sessionId,
                                                               participantId: key.participantId) else { return }
                ledger.decorate(&stored, key: key)
                try await store.putParticipant(stored)
            }
        } catch {
            logger.error("participant recording state could not be persisted", metadata: ["error": "\(error)"])
        }
    }
}
