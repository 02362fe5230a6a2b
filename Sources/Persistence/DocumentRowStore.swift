// What the SQL stores share: most resources are one row per ARN holding the resource's JSON
// document (StoredDocument). A store supplies the four row operations for its dialect; the
// CompositionStore calls for those resources are written once, here.
public import APIModels

/// The resources keyed by ARN (a table each in the SQL stores).
public enum DocumentTable: Sendable, CaseIterable {
    case encoderConfiguration, storageConfiguration, stage, composition, ingestConfiguration, publicKey
}

public protocol DocumentRowStore: CompositionStore {
    /// Inserts or replaces the row `arn` with `value`'s document (tables whose other columns
    /// derive from the document write them in their own put).
    func putDocument<T: Encodable & Sendable>(_ value: T, arn: String, in table: DocumentTable) async throws(PersistenceError)
    func document<T: Decodable & Sendable>(_ type: T.Type, arn: String, in table: DocumentTable) async throws(PersistenceError) -> T?
    /// Every row's document, by ARN in byte order.
    func documents<T: Decodable & Sendable>(_ type: T.Type, in table: DocumentTable) async throws(PersistenceError) -> [T]
    /// The rows after `after` by ARN in byte order, at most `limit` (read as `limit + 1` rows,
    /// `WHERE arn > ? ORDER BY arn LIMIT ?`, to know whether more follow). `stageArn` keeps
    /// only that stage's rows; only the composition table has the column.
    func documents<T: Decodable & Sendable>(_ type: T.Type, in table: DocumentTable, after: String?, limit: Int,
                                            stageArn: String?) async throws(PersistenceError) -> KeysetPage<T>
    func countDocuments(in table: DocumentTable) async throws(PersistenceError) -> Int
    /// Whether a row was deleted.
    func deleteDocument(arn: String, in table: DocumentTable) async throws(PersistenceError) -> Bool
}

extension DocumentRowStore {
    public func putEncoderConfiguration(_ value: EncoderConfiguration) async throws(PersistenceError) {
        try await putDocument(value, arn: value.arn, in: .encoderConfiguration)
    }
    public func encoderConfiguration(arn: String) async throws(PersistenceError) -> EncoderConfiguration? {
        try await document(EncoderConfiguration.self, arn: arn, in: .encoderConfiguration)
    }
    public func encoderConfigurations() async throws(PersistenceError) -> [EncoderConfiguration] {
        try await documents(EncoderConfiguration.self, in: .encoderConfiguration)
    }
    public func encoderConfigurations(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<EncoderConfiguration> {
        try await documents(EncoderConfiguration.self, in: .encoderConfiguration, after: after, limit: limit, stageArn: nil)
    }
    public func deleteEncoderConfiguration(arn: String) async throws(PersistenceError) -> Bool {
        try await deleteDocument(arn: arn, in: .encoderConfiguration)
    }

    public func putStorageConfiguration(_ value: StorageConfiguration) async throws(PersistenceError) {
        try await putDocument(value, arn: value.arn, in: .storageConfiguration)
    }
    public func storageConfiguration(arn: String) async throws(PersistenceError) -> StorageConfiguration? {
        try await document(StorageConfiguration.self, arn: arn, in: .storageConfiguration)
    }
    public func storageConfigurations() async throws(PersistenceError) -> [StorageConfiguration] {
        try await documents(StorageConfiguration.self, in: .storageConfiguration)
    }
    public func storageConfigurations(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StorageConfiguration> {
        try await documents(StorageConfiguration.self, in: .storageConfiguration, after: after, limit: limit, stageArn: nil)
    }
    public func deleteStorageConfiguration(arn: String) async throws(PersistenceError) -> Bool {
        try await deleteDocument(arn: arn, in: .storageConfiguration)
    }

    public func putStage(_ value: StoredStage) async throws(PersistenceError) {
        try await putDocument(value, arn: value.stage.arn, in: .stage)
    }
    public func stage(arn: String) async throws(PersistenceError) -> StoredStage? {
        try await document(StoredStage.self, arn: arn, in: .stage)
    }
    public func stages() async throws(PersistenceError) -> [StoredStage] {
        try await documents(StoredStage.self, in: .stage)
    }
    public func stages(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StoredStage> {
        try await documents(StoredStage.self, in: .stage, after: after, limit: limit, stageArn: nil)
    }
    public func deleteStage(arn: String) async throws(PersistenceError) -> Bool {
        try await deleteDocument(arn: arn, in: .stage)
    }

    public func ingestConfiguration(arn: String) async throws(PersistenceError) -> StoredIngestConfiguration? {
        try await document(StoredIngestConfiguration.self, arn: arn, in: .ingestConfiguration)
    }
    public func ingestConfigurations() async throws(PersistenceError) -> [StoredIngestConfiguration] {
        try await documents(StoredIngestConfiguration.self, in: .ingestConfiguration)
    }
    public func ingestConfigurations(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StoredIngestConfiguration> {
        try await documents(StoredIngestConfiguration.self, in: .ingestConfiguration, after: after, limit: limit, stageArn: nil)
    }
    public func deleteIngestConfiguration(arn: String) async throws(PersistenceError) -> Bool {
        try await deleteDocument(arn: arn, in: .ingestConfiguration)
    }

    public func putPublicKey(_ value: StoredPublicKey) async throws(PersistenceError) {
        try await putDocument(value, arn: value.arn, in: .publicKey)
    }
    public func publicKey(arn: String) async throws(PersistenceError) -> StoredPublicKey? {
        try await document(StoredPublicKey.self, arn: arn, in: .publicKey)
    }
    public func publicKeys() async throws(PersistenceError) -> [StoredPublicKey] {
        try await documents(StoredPublicKey.self, in: .publicKey)
    }
    public func publicKeys(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StoredPublicKey> {
        try await documents(StoredPublicKey.self, in: .publicKey, after: after, limit: limit, stageArn: nil)
    }
    public func deletePublicKey(arn: String) async throws(PersistenceError) -> Bool {
        try await deleteDocument(arn: arn, in: .publicKey)
    }

    public func composition(arn: String) async throws(PersistenceError) -> StoredComposition? {
        try await document(StoredComposition.self, arn: arn, in: .composition)
    }
    public func compositions() async throws(PersistenceError) -> [StoredComposition] {
        try await documents(StoredComposition.self, in: .composition)
    }
    public func compositions(stageArn: String?, after: String?, limit: Int) async throws(PersistenceError)
        -> KeysetPage<StoredComposition> {
        try await documents(StoredComposition.self, in: .composition, after: after, limit: limit, stageArn: stageArn)
    }
    public func count(_ kind: DocumentTable) async throws(PersistenceError) -> Int {
        try await countDocuments(in: kind)
    }
    public func deleteComposition(arn: String) async throws(PersistenceError) -> Bool {
        try await deleteDocument(arn: arn, in: .composition)
    }
}
