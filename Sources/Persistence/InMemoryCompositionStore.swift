// The store for unit tests: the same contract as SQLiteCompositionStore, in a dictionary.
public import APIModels
import Synchronization

public final class InMemoryCompositionStore: CompositionStore {
    private struct Tables {
        var encoders: [String: EncoderConfiguration] = [:]
        var storages: [String: StorageConfiguration] = [:]
        var stages: [String: StoredStage] = [:]
        var compositions: [String: StoredComposition] = [:]
        var ingestConfigurations: [String: StoredIngestConfiguration] = [:]
        /// Keyed by "stageArn sessionId".
        var sessions: [String: StoredStageSession] = [:]
        var participants: [String: [String: (order: Int, value: StoredParticipant)]] = [:]
        var events: [String: [(participantId: String, event: ParticipantEvent)]] = [:]
        var joinCounter = 0
        var publicKeys: [String: StoredPublicKey] = [:]
        var revocations: [String: Int64] = [:]
        var fleetNonces: [String: Int64] = [:]
    }

    private static func key(_ stageArn: String, _ sessionId: String) -> String { stageArn + " " + sessionId }

    /// The SQL stores' keyset page over a dictionary keyed by ARN: the rows after `after` in
    /// byte order (Swift compares strings by Unicode scalars, which for UTF-8 is byte order).
    private static func page<Item>(_ rows: [String: Item], after: String?, limit: Int,
                                   where keep: (Item) -> Bool = { _ in true }) -> KeysetPage<Item> {
        let limit = KeysetPage<Item>.clamped(limit), after = after ?? ""
        let chosen = rows.filter { after.utf8.lexicographicallyPrecedes($0.key.utf8) && keep($0.value) }
            .sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            .prefix(limit + 1).map { (key: $0.key, item: $0.value) }
        return KeysetPage(reading: Array(chosen), limit: limit)
    }

    private let tables = Mutex(Tables())

    public init() {}

    public func putEncoderConfiguration(_ value: EncoderConfiguration) async throws(PersistenceError) {
        tables.withLock { $0.encoders[value.arn] = value }
    }
    public func encoderConfiguration(arn: String) async throws(PersistenceError) -> EncoderConfiguration? {
        tables.withLock { $0.encoders[arn] }
    }
    public func encoderConfigurations() async throws(PersistenceError) -> [EncoderConfiguration] {
        tables.withLock { $0.encoders.values.sorted { $0.arn < $1.arn } }
    }
    public func encoderConfigurations(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<EncoderConfiguration> {
        tables.withLock { Self.page($0.encoders, after: after, limit: limit) }
    }
    public func deleteEncoderConfiguration(arn: String) async throws(PersistenceError) -> Bool {
        tables.withLock { $0.encoders.removeValue(forKey: arn) != nil }
    }

    public func putStorageConfiguration(_ value: StorageConfiguration) async throws(PersistenceError) {
        tables.withLock { $0.storages[value.arn] = value }
    }
    public func storageConfiguration(arn: String) async throws(PersistenceError) -> StorageConfiguration? {
        tables.withLock { $0.storages[arn] }
    }
    public func storageConfigurations() async throws(PersistenceError) -> [StorageConfiguration] {
        tables.withLock { $0.storages.values.sorted { $0.arn < $1.arn } }
    }
    public func storageConfigurations(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StorageConfiguration> {
        tables.withLock { Self.page($0.storages, after: after, limit: limit) }
    }
    public func deleteStorageConfiguration(arn: String) async throws(PersistenceError) -> Bool {
        tables.withLock { $0.storages.removeValue(forKey: arn) != nil }
    }

    public func putStage(_ value: StoredStage) async throws(PersistenceError) {
        tables.withLock { $0.stages[value.stage.arn] = value }
    }
    public func stage(arn: String) async throws(PersistenceError) -> StoredStage? {
        tables.withLock { $0.stages[arn] }
    }
    public func stages() async throws(PersistenceError) -> [StoredStage] {
        tables.withLock { $0.stages.values.sorted { $0.stage.arn < $1.stage.arn } }
    }
    public func stages(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StoredStage> {
        tables.withLock { Self.page($0.stages, after: after, limit: limit) }
    }
    public func deleteStage(arn: String) async throws(PersistenceError) -> Bool {
        tables.withLock { $0.stages.removeValue(forKey: arn) != nil }
    }

    public func putIngestConfiguration(_ value: StoredIngestConfiguration) async throws(PersistenceError) {
        tables.withLock { $0.ingestConfigurations[value.arn] = value }
    }
    public func ingestConfiguration(arn: String) async throws(PersistenceError) -> StoredIngestConfiguration? {
        tables.withLock { $0.ingestConfigurations[arn] }
    }
    public func ingestConfiguration(streamKey: String) async throws(PersistenceError) -> StoredIngestConfiguration? {
        tables.withLock { tables in
            tables.ingestConfigurations.values.sorted { $0.arn < $1.arn }.first { $0.configuration.streamKey == streamKey }
        }
    }
    public func ingestConfigurations() async throws(PersistenceError) -> [StoredIngestConfiguration] {
        tables.withLock { $0.ingestConfigurations.values.sorted { $0.arn < $1.arn } }
    }
    public func ingestConfigurations(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StoredIngestConfiguration> {
        tables.withLock { Self.page($0.ingestConfigurations, after: after, limit: limit) }
    }
    public func deleteIngestConfiguration(arn: String) async throws(PersistenceError) -> Bool {
        tables.withLock { $0.ingestConfigurations.removeValue(forKey: arn) != nil }
    }

    public func putStageSession(_ value: StoredStageSession) async throws(PersistenceError) {
        tables.withLock { $0.sessions[Self.key(value.stageArn, value.session.sessionId ?? "")] = value }
    }
    public func stageSession(stageArn: String, sessionId: String) async throws(PersistenceError) -> StoredStageSession? {
        tables.withLock { $0.sessions[Self.key(stageArn, sessionId)] }
    }
    public func stageSessions(stageArn: String) async throws(PersistenceError) -> [StoredStageSession] {
        tables.withLock { tables in
            tables.sessions.values.filter { $0.stageArn == stageArn }.sorted {
                ($0.session.startTime?.secondsSince1970 ?? 0, $0.session.sessionId ?? "")
                    > ($1.session.startTime?.secondsSince1970 ?? 0, $1.session.sessionId ?? "")
            }
        }
    }
    public func stageSessions(stageArn: String, after: StageSessionPosition?, limit: Int) async throws(PersistenceError)
        -> KeysetPage<StoredStageSession> {
        let limit = KeysetPage<StoredStageSession>.clamped(limit), after = after.map(PageKey.session) ?? ""
        // A session's key sorts in byte order as the sessions do.
        let rows = tables.withLock { tables in
            tables.sessions.values.lazy.filter { $0.stageArn == stageArn }
                .map { (key: PageKey.session(StageSessionPosition($0)), item: $0) }
                .filter { after.utf8.lexicographicallyPrecedes($0.key.utf8) }
                .sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                .prefix(limit + 1)
        }
        return KeysetPage(reading: Array(rows), limit: limit)
    }
    public func openStageSessions() async throws(PersistenceError) -> [StoredStageSession] {
        tables.withLock { $0.sessions.values.filter { $0.session.endTime == nil }.sorted { ($0.stageArn, $0.session.sessionId ?? "") < ($1.stageArn, $1.session.sessionId ?? "") } }
    }
    public func putParticipant(_ value: StoredParticipant) async throws(PersistenceError) {
        tables.withLock { tables in
            let key = Self.key(value.stageArn, value.sessionId)
            let id = value.participant.participantId ?? ""
            let order = tables.participants[key]?[id]?.order ?? { tables.joinCounter += 1; return tables.joinCounter }()
            tables.participants[key, default: [:]][id] = (order, value)
        }
    }
    public func participant(stageArn: String, sessionId: String, participantId: String) async throws(PersistenceError) -> StoredParticipant? {
        tables.withLock { $0.participants[Self.key(stageArn, sessionId)]?[participantId]?.value }
    }
    public func participants(stageArn: String, sessionId: String) async throws(PersistenceError) -> [StoredParticipant] {
        tables.withLock { ($0.participants[Self.key(stageArn, sessionId)] ?? [:]).values.sorted { $0.order < $1.order }.map(\.value) }
    }
    public func participants(stageArn: String, sessionId: String, matching filter: ParticipantFilter, afterJoinOrder: Int64?,
                             limit: Int) async throws(PersistenceError) -> KeysetPage<StoredParticipant> {
        try await ParticipantFilter.page(after: afterJoinOrder, limit: limit, matching: filter) { after, count in
            tables.withLock { tables in
                (tables.participants[Self.key(stageArn, sessionId)] ?? [:]).values
                    .filter { Int64($0.order) > after ?? Int64.min }
                    .sorted { $0.order < $1.order }.prefix(count)
                    .map { (joinOrder: Int64($0.order), participant: $0.value) }
            }
        }
    }
    public func appendParticipantEvent(_ value: StoredParticipantEvent) async throws(PersistenceError) {
        tables.withLock { $0.events[Self.key(value.stageArn, value.sessionId), default: []].append((value.participantId, value.event)) }
    }
    public func participantEvents(stageArn: String, sessionId: String, participantId: String) async throws(PersistenceError) -> [ParticipantEvent] {
        tables.withLock { ($0.events[Self.key(stageArn, sessionId)] ?? []).filter { $0.participantId == participantId }.map(\.event) }
    }
    public func participantEvents(stageArn: String, sessionId: String, participantId: String, afterSequence: Int64?,
                                  limit: Int) async throws(PersistenceError) -> KeysetPage<ParticipantEvent> {
        let limit = KeysetPage<ParticipantEvent>.clamped(limit)
        // An event's place is its index among the session's events, plus one.
        let rows = tables.withLock { tables in
            let events = tables.events[Self.key(stageArn, sessionId)] ?? []
            let start = Int(min(max(afterSequence ?? 0, 0), Int64(events.count)))
            var rows: [(key: String, item: ParticipantEvent)] = []
            for index in events.indices[start...] where events[index].participantId == participantId {
                rows.append((PageKey.sequence(Int64(index) + 1), events[index].event))
                if rows.count > limit { break }
            }
            return rows
        }
        return KeysetPage(reading: rows, limit: limit)
    }
    public func pruneStageSessions(endedBefore seconds: Int64) async throws(PersistenceError) {
        tables.withLock { tables in
            for (key, stored) in tables.sessions {
                guard let end = stored.session.endTime?.secondsSince1970, end < seconds else { continue }
                tables.sessions[key] = nil
                tables.participants[key] = nil
                tables.events[key] = nil
            }
        }
    }

    public func putRevocation(key: String, until seconds: Int64) async throws(PersistenceError) {
        tables.withLock { $0.revocations[key] = max($0.revocations[key] ?? seconds, seconds) }
    }

    public func revocation(key: String) async throws(PersistenceError) -> Int64? {
        tables.withLock { $0.revocations[key] }
    }

    public func pruneRevocations(expiredBefore seconds: Int64) async throws(PersistenceError) {
        tables.withLock { $0.revocations = $0.revocations.filter { $0.value >= seconds } }
    }

    public func claimFleetNonce(_ nonce: String, until: Int64, now: Int64) async throws(PersistenceError) -> Bool {
        tables.withLock { tables in
            tables.fleetNonces = tables.fleetNonces.filter { $0.value >= now }
            guard tables.fleetNonces[nonce] == nil else { return false }
            tables.fleetNonces[nonce] = until
            return true
        }
    }

    public func putPublicKey(_ value: StoredPublicKey) async throws(PersistenceError) {
        tables.withLock { $0.publicKeys[value.arn] = value }
    }
    public func publicKey(arn: String) async throws(PersistenceError) -> StoredPublicKey? {
        tables.withLock { $0.publicKeys[arn] }
    }
    public func publicKeys() async throws(PersistenceError) -> [StoredPublicKey] {
        tables.withLock { $0.publicKeys.values.sorted { $0.arn < $1.arn } }
    }
    public func publicKeys(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StoredPublicKey> {
        tables.withLock { Self.page($0.publicKeys, after: after, limit: limit) }
    }
    public func deletePublicKey(arn: String) async throws(PersistenceError) -> Bool {
        tables.withLock { $0.publicKeys.removeValue(forKey: arn) != nil }
    }

    public func putComposition(_ value: StoredComposition) async throws(PersistenceError) {
        tables.withLock { $0.compositions[value.arn] = value }
    }
    public func composition(arn: String) async throws(PersistenceError) -> StoredComposition? {
        tables.withLock { $0.compositions[arn] }
    }
    public func compositions() async throws(PersistenceError) -> [StoredComposition] {
        tables.withLock { $0.compositions.values.sorted { $0.arn < $1.arn } }
    }
    public func compositions(stageArn: String?, after: String?, limit: Int) async throws(PersistenceError)
        -> KeysetPage<StoredComposition> {
        tables.withLock { tables in
            Self.page(tables.compositions, after: after, limit: limit) { stored in
                stageArn.map { stored.composition.stageArn == $0 } ?? true
            }
        }
    }
    public func count(_ kind: DocumentTable) async throws(PersistenceError) -> Int {
        tables.withLock { tables in
            switch kind {
            case .encoderConfiguration: tables.encoders.count
            case .storageConfiguration: tables.storages.count
            case .stage: tables.stages.count
            case .composition: tables.compositions.count
            case .ingestConfiguration: tables.ingestConfigurations.count
            case .publicKey: tables.publicKeys.count
            }
        }
    }
    public func deleteComposition(arn: String) async throws(PersistenceError) -> Bool {
        tables.withLock { $0.compositions.removeValue(forKey: arn) != nil }
    }
}
