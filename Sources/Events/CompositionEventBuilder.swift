import MediaCore
// Turns the lifecycle's notifications into EventBridge events for one deployment
// (region, account), with the event ID and wall-clock time injectable for tests.
public import Lifecycle
import Foundation

public struct CompositionEventBuilder: Sendable {
    public let region: String
    public let account: String
    private let makeID: @Sendable () -> String
    private let secondsSince1970: @Sendable () -> Int64

    /// - Parameters:
    ///   - makeID: a fresh event ID; defaults to a random lowercase UUID.
    ///   - secondsSince1970: wall-clock UTC time in whole seconds; defaults to the system clock.
    public init(region: String, account: String,
                makeID: (@Sendable () -> String)? = nil,
                secondsSince1970: (@Sendable () -> Int64)? = nil) {
        self.region = region
        self.account = account
        self.makeID = makeID ?? { UUID().uuidString.lowercased() }
        self.secondsSince1970 = secondsSince1970 ?? { Int64(Date().timeIntervalSince1970.rounded(.down)) }
    }

    public func event(for notification: CompositionNotification, compositionArn: String,
                      stageArn: String) -> CompositionStateChangeEvent {
        CompositionStateChangeEvent(
            id: makeID(), account: account, time: Self.formatTime(secondsSince1970()), region: region,
            resources: [compositionArn],
            detail: .init(eventName: notification.eventName, stageArn: stageArn,
                          id: notification.destinationID, reason: notification.reason))
    }

    /// The events for the `.emit` actions among `actions`, in order; other actions are skipped.
    public func events(for actions: [CompositionAction], compositionArn: String,
                       stageArn: String) -> [CompositionStateChangeEvent] {
        actions.compactMap { action in
            guard case .emit(let notification) = action else { return nil }
            return event(for: notification, compositionArn: compositionArn, stageArn: stageArn)
        }
    }

    func newID() -> String { makeID() }
    func currentSeconds() -> Int64 { secondsSince1970() }

    /// "2017-06-12T10:23:43Z" from seconds since 1970 (proleptic Gregorian, UTC).
    public static func formatTime(_ seconds: Int64) -> String { UTCTimestamp.format(secondsSince1970: seconds) }
}

/// "IVS Stage Update" events (the user guide's "Examples: Stage Update").
public enum StageUpdate: String, Sendable, CaseIterable {
    case participantPublished = "Participant Published"
    case participantUnpublished = "Participant Unpublished"
    case participantPublishError = "Participant Publish Error"
}

/// "IVS Participant Recording State Change" event names.
public enum ParticipantRecordingEvent: String, Sendable, CaseIterable {
    case recordingStart = "Recording Start", recordingEnd = "Recording End"
    case recordingStartFailure = "Recording Start Failure", recordingEndFailure = "Recording End Failure"
}

extension CompositionEventBuilder {
    /// An individual participant recording started or ended; `durationMs` at its end.
    public func participantRecording(_ event: ParticipantRecordingEvent, stageArn: String, sessionId: String, participantId: String,
                                     bucket: String, keyPrefix: String, durationMs: Int64? = nil) -> IVSEvent {
        var detail = IVSEvent.Detail(eventName: event.rawValue, sessionId: sessionId, participantId: participantId)
        detail.recordingS3BucketName = bucket
        detail.recordingS3KeyPrefix = keyPrefix
        detail.recordingDurationMs = durationMs
        return IVSEvent(id: newID(), account: account, time: Self.formatTime(currentSeconds()), region: region, resources: [stageArn],
                        detail: detail, detailType: IVSEvent.participantRecordingDetailType)
    }

    /// A stage update about one participant; `errorCode` (the model's EventErrorCode) on
    /// publish errors, which also carry `event_time`.
    public func stageUpdate(_ update: StageUpdate, stageArn: String, sessionId: String?, userId: String,
                            participantId: String, errorCode: String? = nil) -> IVSEvent {
        let time = Self.formatTime(currentSeconds())
        return IVSEvent(
            id: newID(), account: account, time: time, region: region, resources: [stageArn],
            detail: .init(eventName: update.rawValue, sessionId: sessionId,
                          eventTime: update == .participantPublishError ? time : nil, userId: userId,
                          participantId: participantId, errorCode: errorCode),
            detailType: IVSEvent.stageUpdateDetailType)
    }
}
