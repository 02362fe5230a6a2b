// The store for unit tests: the same contract as SQLiteCompositionStore, in a dictionary.
public import APIModels
import Synchronization

public final class InMemoryCompositionStore: CompositionStore {
    private struct Tables {
        var encoders: [String: EncoderConfiguration] = [:]
        var storages: [String: StorageConfiguration] = [:]
        var stages: [String: StoredStage] = [:]
        var compositions: [String: StoredComposition] = [:]
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
    public func deleteStage(arn: String) async throws(PersistenceError) -> Bool {
        tables.withLock { $0.stages.removeValue(forKey: arn) != nil }
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
    public func deleteComposition(arn: String) async throws(PersistenceError) -> Bool {
        tables.withLock { $0.compositions.removeValue(forKey: arn) != nil }
    }
}
