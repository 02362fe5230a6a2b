// The composition manager at start-up and when a node is lost: compositions a dead process
// was running are finalized (recordings VOD) and FAILED.
public import APIModels
import Foundation
import Lifecycle
import Logging
import MediaCore
import Persistence
import ServiceLifecycle
import Destinations
import Fleet
import Events
import EventSinks
import HLS
import LiveStage
import Pipeline
import Stages
import Storage
import Composition

extension CompositionManager {
    // MARK: Start-up

    /// Finalizes a crashed composition's S3 recording once its spool is uploaded; retries
    /// every 10 s while the bucket fails, for as long as the daemon runs.
    func finalizeLater(_ recording: StoredRecording, bucket: String, record: StoredComposition, restartedAt: Date,
                               reason: String, logger: Logger) {
        guard let storage = buckets.storage(bucket: bucket) else {
            logger.error("recording cannot be finalized: its bucket is no longer configured", metadata: ["bucket": "\(bucket)"])
            return
        }
        let spool = buckets.spool(destinationId: recording.destinationId)
        let started = record.composition.startTime.map { Date(timeIntervalSince1970: TimeInterval($0.secondsSince1970)) }
        let stageArn = record.composition.stageArn
        logger.notice("recording is finalized once its spool is uploaded",
                      metadata: ["destination.id": "\(recording.destinationId)", "spool.objects": "\(spool?.status.objects ?? 0)"])
        jobs.yield {
            await spool?.finished()
            var attempts = 0
            while !Task.isCancelled {
                attempts += 1
                do {
                    let result = try await RecordingRecovery.finalize(recording, storage: storage, stageArn: stageArn, startedAt: started,
                                                                      restartedAt: restartedAt, reason: reason, logger: logger)
                    logger.notice("recording finalized after restart", metadata: [
                        "destination.id": "\(recording.destinationId)", "segments": "\(result.segments)",
                        "duration.ms": "\(result.durationMs)", "recording.ended": "\(result.endedAt)"])
                    return
                } catch {
                    if attempts == 1 || attempts % 10 == 0 {
                        logger.warning("recording not finalized yet; retrying", metadata: ["error": "\(error)", "attempts": "\(attempts)"])
                    }
                    try? await Task.sleep(for: .seconds(10))
                }
            }
        }
    }

    /// Loads persisted compositions. Those that were running when the process died are
    /// finalized (recording playlist VOD + ENDLIST, recording-failed.json) and marked FAILED.
    /// In a fleet the store is shared: this node loads nothing (reads come from the store) and
    /// fails only what it is handed with `takeOver`.
    public func restore() async throws(APIError) {
        guard !ownership.isFleet else { return }
        let stored: [StoredComposition]
        do { stored = try await store.compositions() } catch { throw .internalServer("composition store: \(error.message)") }
        let now = clock.now()
        let wallNow = wallClock()
        for record in stored {
            if record.composition.state == .stopped || record.composition.state == .failed {
                let endSeconds = record.composition.endTime?.secondsSince1970 ?? Int64(wallNow.timeIntervalSince1970)
                let age = max(0, Int64(wallNow.timeIntervalSince1970) - endSeconds)
                entries[record.arn] = Entry(stored: record, endedAt: now - .seconds(age), logger: entryLogger(record.arn))
                continue
            }
            await failOrphan(record, reason: Self.restartReason, wallNow: wallNow)
        }
        await flush()
        updateMetrics()
    }

    /// Fails the compositions still running on `stages`, which a node that is gone held
    /// (reaped by this one, or this node's own earlier incarnation): each is marked FAILED with
    /// `reason` and a Session Failure event, and its S3 recording finalized from the segments
    /// in the bucket. Returns how many.
    @discardableResult
    public func takeOver(stages: [String], reason: String) async -> Int {
        guard !stages.isEmpty else { return 0 }
        let stored: [StoredComposition]
        do { stored = try await store.compositions() } catch {
            logger.error("compositions of a lost node cannot be read; they stay as they are", metadata: ["error": "\(error)"])
            return 0
        }
        let wanted = Set(stages)
        let orphans = stored.filter { record in
            wanted.contains(record.composition.stageArn) && entries[record.arn] == nil
                && record.composition.state != .stopped && record.composition.state != .failed
        }
        let wallNow = wallClock()
        for record in orphans { await failOrphan(record, reason: reason, wallNow: wallNow) }
        // Those that had already ended are kept here for their retention (then deleted), as
        // their node would have: nothing else would ever remove them from the table.
        for record in stored where wanted.contains(record.composition.stageArn) && entries[record.arn] == nil {
            entries[record.arn] = Entry(stored: record, endedAt: clock.now(), logger: entryLogger(record.arn))
        }
        await flush()
        updateMetrics()
        return orphans.count
    }

    func entryLogger(_ arn: String) -> Logger {
        var entryLogger = logger
        entryLogger[metadataKey: "composition.id"] = "\(arn.split(separator: "/").last ?? "")"
        return entryLogger
    }

    /// A composition whose process is gone: its recording finalized, FAILED with `reason`.
    func failOrphan(_ original: StoredComposition, reason given: String, wallNow: Date) async {
        var record = original
        let entryLogger = entryLogger(record.arn)
        var reason = given
        if let recording = record.recording, let bucket = recording.bucket, buckets.isSpooled(bucket: bucket) {
            // An S3 bucket may be out now: finalize in the background, once the spool the
            // dead process left (if it was this host) has been uploaded, retrying until the
            // bucket answers.
            finalizeLater(recording, bucket: bucket, record: record, restartedAt: wallNow, reason: reason, logger: entryLogger)
        } else if let recording = record.recording {
            let started = record.composition.startTime.map { Date(timeIntervalSince1970: TimeInterval($0.secondsSince1970)) }
            do {
                let result = try await RecordingRecovery.finalize(recording, storage: LocalDirectoryStorage(rootPath: recording.storageRoot),
                                                                  stageArn: record.composition.stageArn,
                                                                  startedAt: started, restartedAt: wallNow, reason: reason,
                                                                  logger: entryLogger)
                entryLogger.notice("recording finalized after restart",
                                   metadata: ["destination.id": "\(recording.destinationId)",
                                              "segments": "\(result.segments)", "duration.ms": "\(result.durationMs)",
                                              "recording.ended": "\(result.endedAt)"])
            } catch {
                entryLogger.error("recording could not be finalized after restart", metadata: ["error": "\(error)"])
                reason += "; recording could not be finalized: \(error)"
            }
        }
        let timestamp = APITimestamp(secondsSince1970: Int64(wallNow.timeIntervalSince1970))
        for index in record.composition.destinations.indices {
            let destination = record.composition.destinations[index]
            switch destination.state {
            case .active, .reconnecting, .stopping:
                record.composition.destinations[index].state = .stopped
                record.composition.destinations[index].endTime = timestamp
                enqueue(.destinationEnd(destinationID: destination.id), record: record)
            case .starting:
                record.composition.destinations[index].state = .failed
                record.composition.destinations[index].endTime = timestamp
            case .stopped, .failed:
                break
            }
        }
        record.composition.state = .failed
        record.composition.endTime = timestamp
        record.failureReason = reason
        enqueue(.sessionFailure(reason: reason), record: record)
        entryLogger.warning("composition's process is gone; marked FAILED", metadata: ["reason": "\(reason)"])
        entries[record.arn] = Entry(stored: record, endedAt: clock.now(), logger: entryLogger)
        dirty.insert(record.arn)
    }
}
