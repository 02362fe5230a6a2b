// What the control plane keeps across restarts: encoder and storage configurations, stages
// (with the recorded source they point at), and compositions with their state, destinations,
// times and failure reason; for live stages, ingest configurations, stage sessions with their
// participants and events, and imported public keys. Tags travel inside each resource. The
// SQLite implementation is the daemon's; the in-memory one serves unit tests. Both behave
// the same.
public import APIModels
import Foundation

/// A stage registered through CreateStage (config-file stages are not stored).
public struct StoredStage: Codable, Hashable, Sendable {
    public var stage: Stage
    /// The recorded stage directory that feeds compositions of this stage.
    public var sourcePath: String

    public init(stage: Stage, sourcePath: String) {
        self.stage = stage
        self.sourcePath = sourcePath
    }
}

/// Where a composition's S3 destination writes, so a restart can finalize it.
public struct StoredRecording: Codable, Hashable, Sendable {
    public var destinationId: String
    /// The bucket's local directory (from the configuration when the composition started);
    /// empty for an S3 bucket.
    public var storageRoot: String
    /// The bucket's name, for an S3 bucket (nil in records written before S3 buckets existed).
    public var bucket: String?
    /// `<stageId>/<compositionId>/<destinationId>/composite`
    public var prefix: String
    /// `720p30-<encoderConfigurationId>`
    public var renditionName: String
    public var width: Int
    public var height: Int
    public var targetSegmentDurationSeconds: Int

    public init(destinationId: String, storageRoot: String, bucket: String? = nil, prefix: String, renditionName: String,
                width: Int, height: Int, targetSegmentDurationSeconds: Int) {
        self.destinationId = destinationId
        self.storageRoot = storageRoot
        self.bucket = bucket
        self.prefix = prefix
        self.renditionName = renditionName
        self.width = width
        self.height = height
        self.targetSegmentDurationSeconds = targetSegmentDurationSeconds
    }
}

public struct StoredComposition: Codable, Hashable, Sendable {
    public var composition: Composition
    public var idempotencyToken: String?
    /// A digest of the StartComposition request that carried `idempotencyToken`: the token
    /// again with another request is refused (nil for compositions stored before it was kept).
    public var requestDigest: String?
    /// Why it failed (Session Failure reason), when it did.
    public var failureReason: String?
    public var recording: StoredRecording?

    public init(composition: Composition, idempotencyToken: String? = nil, requestDigest: String? = nil,
                failureReason: String? = nil, recording: StoredRecording? = nil) {
        self.composition = composition
        self.idempotencyToken = idempotencyToken
        self.requestDigest = requestDigest
        self.failureReason = failureReason
        self.recording = recording
    }

    public var arn: String { composition.arn }
}

/// An ingest configuration and what the API does not show of it.
public struct StoredIngestConfiguration: Codable, Hashable, Sendable {
    public var configuration: IngestConfiguration
    /// Plain RTMP is allowed (CreateIngestConfiguration's insecureIngest).
    public var insecureIngest: Bool

    public init(configuration: IngestConfiguration, insecureIngest: Bool) {
        self.configuration = configuration
        self.insecureIngest = insecureIngest
    }

    public var arn: String { configuration.arn }
}

/// A session of a stage; keyed by the stage ARN and `session.sessionId`.
public struct StoredStageSession: Codable, Hashable, Sendable {
    public var stageArn: String
    public var session: StageSession
    public init(stageArn: String, session: StageSession) {
        self.stageArn = stageArn
        self.session = session
    }
}

/// A participant of one session; keyed by stage, session and `participant.participantId`.
public struct StoredParticipant: Codable, Hashable, Sendable {
    public var stageArn: String
    public var sessionId: String
    public var participant: Participant
    /// The individual recording in progress or last made (`<participant prefix>/<timestamp>`),
    /// so that a restart after a crash can finalize it.
    public var recordingPrefix: String?
    public init(stageArn: String, sessionId: String, participant: Participant, recordingPrefix: String? = nil) {
        self.stageArn = stageArn
        self.sessionId = sessionId
        self.participant = participant
        self.recordingPrefix = recordingPrefix
    }
}

/// One event of a participant in a session. `participantId` files it (the event's own
/// `participantId` is what the API shows).
public struct StoredParticipantEvent: Codable, Hashable, Sendable {
    public var stageArn: String
    public var sessionId: String
    public var participantId: String
    public var event: ParticipantEvent

    public init(stageArn: String, sessionId: String, participantId: String, event: ParticipantEvent) {
        self.stageArn = stageArn
        self.sessionId = sessionId
        self.participantId = participantId
        self.event = event
    }
}

/// A public key imported with ImportPublicKey; keyed by `publicKey.arn`.
public struct StoredPublicKey: Codable, Hashable, Sendable {
    public var publicKey: PublicKey

    public init(publicKey: PublicKey) { self.publicKey = publicKey }

    public var arn: String { publicKey.arn ?? "" }
}

public struct PersistenceError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "persistence: \(message)" }
}

/// How every store keeps a resource: its JSON document, keys sorted (the same text for the
/// same value, whichever store wrote it).
public enum StoredDocument {
    public static func encode<T: Encodable>(_ value: T) throws(PersistenceError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do { return String(decoding: try encoder.encode(value), as: UTF8.self) } catch {
            throw PersistenceError("cannot encode \(T.self): \(error)")
        }
    }

    public static func decode<T: Decodable>(_ type: T.Type, from text: String) throws(PersistenceError) -> T {
        do { return try JSONDecoder().decode(type, from: Data(text.utf8)) } catch {
            throw PersistenceError("stored \(T.self) cannot be read: \(error)")
        }
    }
}

/// One page of a keyset-paged read: rows in key order after a given key, at most a limit.
/// The next page starts after `nextKey`, so every page costs the same wherever it starts and
/// memory follows the page, not the table.
public struct KeysetPage<Item: Sendable>: Sendable {
    public var items: [Item]
    /// The last row's key when more rows follow; nil on the last page.
    public var nextKey: String?

    public init(items: [Item], nextKey: String?) {
        self.items = items
        self.nextKey = nextKey
    }

    /// From up to `limit + 1` rows read in key order: the first `limit`, and whether more follow.
    public init(reading rows: [(key: String, item: Item)], limit: Int) {
        items = rows.prefix(limit).map(\.item)
        nextKey = rows.count > limit ? rows[limit - 1].key : nil
    }

    /// What a store reads at most per page (a List operation asks for at most 100).
    public static var limits: ClosedRange<Int> { 1...1_000 }

    /// `limit` brought into `limits`.
    public static func clamped(_ limit: Int) -> Int { min(max(limit, limits.lowerBound), limits.upperBound) }
}

/// Durable control-plane state. Every call is one transaction; `put` inserts or replaces.
///
/// The `(after:limit:)` reads page by ARN in byte order: rows whose ARN is greater than
/// `after` (every row when nil), at most `limit` (clamped to `KeysetPage.limits`).
public protocol CompositionStore: Sendable {
    func putEncoderConfiguration(_ value: EncoderConfiguration) async throws(PersistenceError)
    func encoderConfiguration(arn: String) async throws(PersistenceError) -> EncoderConfiguration?
    func encoderConfigurations() async throws(PersistenceError) -> [EncoderConfiguration]
    func encoderConfigurations(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<EncoderConfiguration>
    /// Returns whether something was deleted.
    func deleteEncoderConfiguration(arn: String) async throws(PersistenceError) -> Bool

    func putStorageConfiguration(_ value: StorageConfiguration) async throws(PersistenceError)
    func storageConfiguration(arn: String) async throws(PersistenceError) -> StorageConfiguration?
    func storageConfigurations() async throws(PersistenceError) -> [StorageConfiguration]
    func storageConfigurations(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StorageConfiguration>
    func deleteStorageConfiguration(arn: String) async throws(PersistenceError) -> Bool

    func putStage(_ value: StoredStage) async throws(PersistenceError)
    func stage(arn: String) async throws(PersistenceError) -> StoredStage?
    func stages() async throws(PersistenceError) -> [StoredStage]
    func stages(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StoredStage>
    func deleteStage(arn: String) async throws(PersistenceError) -> Bool

    func putIngestConfiguration(_ value: StoredIngestConfiguration) async throws(PersistenceError)
    func ingestConfiguration(arn: String) async throws(PersistenceError) -> StoredIngestConfiguration?
    /// The configuration whose `streamKey` is exactly `streamKey` (an indexed look-up: this
    /// runs for every RTMP publish attempt).
    func ingestConfiguration(streamKey: String) async throws(PersistenceError) -> StoredIngestConfiguration?
    func ingestConfigurations() async throws(PersistenceError) -> [StoredIngestConfiguration]
    func ingestConfigurations(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StoredIngestConfiguration>
    func deleteIngestConfiguration(arn: String) async throws(PersistenceError) -> Bool

    /// Inserts or replaces a stage session (keyed by stage ARN and session ID).
    func putStageSession(_ value: StoredStageSession) async throws(PersistenceError)
    func stageSession(stageArn: String, sessionId: String) async throws(PersistenceError) -> StoredStageSession?
    /// A stage's sessions, newest first.
    func stageSessions(stageArn: String) async throws(PersistenceError) -> [StoredStageSession]
    /// A page of a stage's sessions, newest first (start time descending, then session ID in
    /// byte order): those after `after` (from the newest when nil), at most `limit` (clamped
    /// to `KeysetPage.limits`). Keys are `PageKey.session`.
    func stageSessions(stageArn: String, after: StageSessionPosition?, limit: Int) async throws(PersistenceError)
        -> KeysetPage<StoredStageSession>
    /// Sessions without an end time (open when the daemon stopped).
    func openStageSessions() async throws(PersistenceError) -> [StoredStageSession]
    /// The stage's session without an end time, if it has one.
    func openStageSession(stageArn: String) async throws(PersistenceError) -> StoredStageSession?
    /// Inserts or replaces a participant of a session.
    func putParticipant(_ value: StoredParticipant) async throws(PersistenceError)
    func participant(stageArn: String, sessionId: String, participantId: String) async throws(PersistenceError) -> StoredParticipant?
    /// A session's participants in the order they first joined.
    func participants(stageArn: String, sessionId: String) async throws(PersistenceError) -> [StoredParticipant]
    /// A page of a session's participants that match `filter`, in join order: those that
    /// joined after `afterJoinOrder` (from the first when nil), at most `limit`. Keys are
    /// `PageKey.sequence` of the join order; the store filters while it reads (a bounded
    /// number of rows at a time).
    func participants(stageArn: String, sessionId: String, matching filter: ParticipantFilter, afterJoinOrder: Int64?,
                      limit: Int) async throws(PersistenceError) -> KeysetPage<StoredParticipant>
    /// Adds an event after every event stored so far.
    func appendParticipantEvent(_ value: StoredParticipantEvent) async throws(PersistenceError)
    /// A participant's events, in the order they were appended.
    func participantEvents(stageArn: String, sessionId: String, participantId: String) async throws(PersistenceError) -> [ParticipantEvent]
    /// A page of a participant's events in the order they were appended: those after the
    /// place `afterSequence` (from the first when nil), at most `limit`. Keys are
    /// `PageKey.sequence` of the event's place among the session's events.
    func participantEvents(stageArn: String, sessionId: String, participantId: String, afterSequence: Int64?,
                           limit: Int) async throws(PersistenceError) -> KeysetPage<ParticipantEvent>
    /// Forgets sessions (with their participants and events) that ended before `seconds` since 1970.
    /// Open sessions are never pruned.
    func pruneStageSessions(endedBefore seconds: Int64) async throws(PersistenceError)

    /// WHIP participants revoked by DisconnectParticipant (a `<stage ARN>/<participant ID>`
    /// key), until their token's expiry in seconds since 1970: kept in the store so that a
    /// restart, or another node of the fleet, still refuses the revoked token. A later
    /// revocation of the same participant keeps the later expiry.
    func putRevocation(key: String, until seconds: Int64) async throws(PersistenceError)
    /// The revocation's expiry, if the key is revoked (expired ones may still be returned:
    /// the caller compares with its clock).
    func revocation(key: String) async throws(PersistenceError) -> Int64?
    /// Forgets revocations that expired before `seconds`.
    func pruneRevocations(expiredBefore seconds: Int64) async throws(PersistenceError)

    /// Takes a fleet call's nonce until `until` (ms since 1970), forgetting nonces whose time
    /// has passed (`now`): false when it is taken already (a replayed call). Kept in the
    /// shared database, so a call replayed to another node is refused there too.
    func claimFleetNonce(_ nonce: String, until: Int64, now: Int64) async throws(PersistenceError) -> Bool

    func putPublicKey(_ value: StoredPublicKey) async throws(PersistenceError)
    func publicKey(arn: String) async throws(PersistenceError) -> StoredPublicKey?
    /// Ordered by ARN.
    func publicKeys() async throws(PersistenceError) -> [StoredPublicKey]
    func publicKeys(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StoredPublicKey>
    func deletePublicKey(arn: String) async throws(PersistenceError) -> Bool

    func putComposition(_ value: StoredComposition) async throws(PersistenceError)
    func composition(arn: String) async throws(PersistenceError) -> StoredComposition?
    func compositions() async throws(PersistenceError) -> [StoredComposition]
    /// `stageArn`: only that stage's compositions.
    func compositions(stageArn: String?, after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StoredComposition>
    func deleteComposition(arn: String) async throws(PersistenceError) -> Bool

    /// How many resources of `kind` are stored (what a quota counts), without reading them.
    func count(_ kind: DocumentTable) async throws(PersistenceError) -> Int
}

extension CompositionStore {
    public func openStageSession(stageArn: String) async throws(PersistenceError) -> StoredStageSession? {
        try await stageSessions(stageArn: stageArn).first { $0.session.endTime == nil }
    }

    /// Appends `event`, filed under its own `participantId`.
    public func appendParticipantEvent(stageArn: String, sessionId: String, _ event: ParticipantEvent) async throws(PersistenceError) {
        try await appendParticipantEvent(StoredParticipantEvent(stageArn: stageArn, sessionId: sessionId,
                                                                participantId: event.participantId ?? "", event: event))
    }

    /// Forgets sessions (with their participants and events) that ended before `time`.
    public func pruneStageSessions(endedBefore time: APITimestamp) async throws(PersistenceError) {
        try await pruneStageSessions(endedBefore: time.secondsSince1970)
    }
}
