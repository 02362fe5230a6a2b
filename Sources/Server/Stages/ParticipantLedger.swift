// What the stage runtime knows of each participant beyond the session book: its individual
// recording and its part in participant replication. Every write of the participant's stored
// record merges these fields in, so a session-book write never loses them and their writes
// never lose the book's.
import APIModels
import Persistence

struct ParticipantLedger {
    /// A recorded participant's recording fields (`recordingState`, bucket, prefix).
    struct Recording: Equatable {
        var state: ParticipantRecordingState
        var bucket: String
        var prefix: String
    }

    /// A participant's replication fields: SOURCE on the source stage, REPLICA (with its state
    /// and source) on the destination.
    struct Replication: Equatable {
        var type: ReplicationType
        var state: ReplicationState?
        var sourceStageArn: String?
        var sourceSessionId: String?
    }

    private(set) var recordings: [ParticipantRecordingKey: Recording] = [:]
    /// Each recorded participant's current recording (its full prefix).
    private(set) var recordingPrefixes: [ParticipantRecordingKey: String] = [:]
    private(set) var replications: [ParticipantRecordingKey: Replication] = [:]

    func recording(_ key: ParticipantRecordingKey) -> Recording? { recordings[key] }

    /// A recording that cannot start: FAILED, with the bucket when known.
    mutating func recordingFailedToStart(_ key: ParticipantRecordingKey, bucket: String) {
        recordings[key] = Recording(state: .failed, bucket: bucket, prefix: "")
    }

    /// A recording about to start: STARTING, unless a previous one of the participant is still
    /// STOPPING (it says so until it has ended).
    mutating func recordingStarting(_ key: ParticipantRecordingKey, bucket: String) {
        guard recordings[key]?.state != .stopping else { return }
        recordings[key] = Recording(state: .starting, bucket: bucket, prefix: recordings[key]?.prefix ?? "")
    }

    mutating func recordingActive(_ key: ParticipantRecordingKey, bucket: String, prefix: String, participantPrefix: String) {
        recordings[key] = Recording(state: .active, bucket: bucket, prefix: participantPrefix)
        recordingPrefixes[key] = prefix
    }

    mutating func recordingStopping(_ key: ParticipantRecordingKey) {
        recordings[key]?.state = .stopping
    }

    mutating func recordingEnded(_ key: ParticipantRecordingKey, failed: Bool, bucket: String) {
        recordings[key] = Recording(state: failed ? .failed : .stopped, bucket: bucket, prefix: recordings[key]?.prefix ?? "")
    }

    mutating func replicationStarted(replica: ParticipantRecordingKey, source: ParticipantRecordingKey) {
        replications[replica] = Replication(type: .replica, state: .active, sourceStageArn: source.stageArn,
                                            sourceSessionId: source.sessionId)
        replications[source] = Replication(type: .source, state: nil, sourceStageArn: nil, sourceSessionId: nil)
    }

    mutating func replicationStopped(replica: ParticipantRecordingKey) {
        replications[replica]?.state = .stopped
    }

    /// Writes what the ledger holds of `key` into its participant record.
    func decorate(_ stored: inout StoredParticipant, key: ParticipantRecordingKey) {
        if let recording = recordings[key] {
            stored.participant.recordingState = recording.state
            stored.participant.recordingS3BucketName = recording.bucket
            stored.participant.recordingS3Prefix = recording.prefix
        }
        if let replication = replications[key] {
            stored.participant.replicationType = replication.type
            stored.participant.replicationState = replication.state
            stored.participant.sourceStageArn = replication.sourceStageArn
            stored.participant.sourceSessionId = replication.sourceSessionId
        }
        stored.recordingPrefix = recordingPrefixes[key] ?? stored.recordingPrefix
    }
}

/// One participant replication on this node: the entry ListParticipantReplicas shows, the
/// thread that forwards its media, and its share of the destination stage's node.
struct ReplicaEntry {
    struct Key: Hashable { var source: String, destination: String, participantId: String }
    var replica: ParticipantReplica
    let forwarder: ReplicaForwarder
    var reservation: StageReservation?

    /// Ends it (StopParticipantReplication, DisconnectParticipant of the replica, DeleteStage):
    /// STOPPED at once, the forwarder stops and the replica leaves.
    mutating func stop() {
        replica.replicationState = .stopped
        forwarder.stop()
    }
}
