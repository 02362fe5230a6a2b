import APIModels
import Lifecycle
import Foundation
import Persistence
import XCTest

final class CompositionStoreTests: XCTestCase {
    let encoder = EncoderConfiguration(arn: "arn:aws:ivs:us-east-1:123456789012:encoder-configuration/AAAAAAAAAAAA",
                                       name: "e", video: Video().withDefaults(), tags: ["k": "v"])
    let storage = StorageConfiguration(arn: "arn:aws:ivs:us-east-1:123456789012:storage-configuration/BBBBBBBBBBBB",
                                       name: "s", s3: S3StorageConfiguration(bucketName: "bucket"), tags: [:])

    func composition(_ id: String, state: CompositionState) -> StoredComposition {
        StoredComposition(
            composition: Composition(arn: "arn:aws:ivs:us-east-1:123456789012:composition/\(id)",
                                     stageArn: "arn:aws:ivs:us-east-1:123456789012:stage/CCCCCCCCCCCC", state: state,
                                     layout: .defaultGrid,
                                     destinations: [Destination(id: "DDDDDDDDDDDD", state: .active,
                                                                startTime: APITimestamp(secondsSince1970: 1_700_000_000),
                                                                configuration: DestinationConfiguration(name: ""))],
                                     tags: ["team": "video"], startTime: APITimestamp(secondsSince1970: 1_700_000_000)),
            idempotencyToken: "tok", failureReason: state == .failed ? "why" : nil,
            recording: StoredRecording(destinationId: "DDDDDDDDDDDD", storageRoot: "/tmp/r", prefix: "a/b/c/composite",
                                       renditionName: "720p30-x", width: 1280, height: 720, targetSegmentDurationSeconds: 2))
    }

    func exercise(_ store: some CompositionStore) async throws {
        try await store.putEncoderConfiguration(encoder)
        try await store.putStorageConfiguration(storage)
        let fetchedEncoder = try await store.encoderConfiguration(arn: encoder.arn)
        XCTAssertEqual(fetchedEncoder, encoder)
        let fetchedStorage = try await store.storageConfiguration(arn: storage.arn)
        XCTAssertEqual(fetchedStorage, storage)
        let missing = try await store.encoderConfiguration(arn: "nope")
        XCTAssertNil(missing)

        let stage = StoredStage(stage: Stage(arn: "arn:aws:ivs:us-east-1:123456789012:stage/EEEEEEEEEEEE", name: "x", tags: [:]),
                                sourcePath: "/srv/stage")
        try await store.putStage(stage)
        let stages = try await store.stages()
        XCTAssertEqual(stages, [stage])

        var running = composition("FFFFFFFFFFFF", state: .active)
        try await store.putComposition(running)
        running.composition.state = .stopped
        running.composition.endTime = APITimestamp(secondsSince1970: 1_700_000_100)
        try await store.putComposition(running)
        try await store.putComposition(composition("GGGGGGGGGGGG", state: .failed))
        let all = try await store.compositions()
        XCTAssertEqual(all.map(\.composition.state), [.stopped, .failed])
        XCTAssertEqual(all.first, running)

        let deleted = try await store.deleteComposition(arn: running.arn)
        XCTAssertTrue(deleted)
        let deletedAgain = try await store.deleteComposition(arn: running.arn)
        XCTAssertFalse(deletedAgain)
        let deletedEncoder = try await store.deleteEncoderConfiguration(arn: encoder.arn)
        XCTAssertTrue(deletedEncoder)
        let encoders = try await store.encoderConfigurations()
        XCTAssertEqual(encoders, [])
        let deletedStage = try await store.deleteStage(arn: stage.stage.arn)
        XCTAssertTrue(deletedStage)
        let deletedStorage = try await store.deleteStorageConfiguration(arn: storage.arn)
        XCTAssertTrue(deletedStorage)
    }

    func testInMemoryStore() async throws { try await exercise(InMemoryCompositionStore()) }
    func testSQLiteStoreInMemory() async throws { try await exercise(try SQLiteCompositionStore()) }

    func testPostgreSQL() async throws { try await PostgresStores.with { store in try await exercise(store) } }

    func testSQLiteStoreSurvivesReopening() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("state.sqlite").path
        do {
            let store = try SQLiteCompositionStore(path: path)
            try await store.putEncoderConfiguration(encoder)
            try await store.putComposition(composition("FFFFFFFFFFFF", state: .active))
        }
        let reopened = try SQLiteCompositionStore(path: path)
        let fetched = try await reopened.encoderConfiguration(arn: encoder.arn)
        XCTAssertEqual(fetched, encoder)
        let compositions = try await reopened.compositions()
        XCTAssertEqual(compositions, [composition("FFFFFFFFFFFF", state: .active)])
    }

    func testUnreadableDatabaseIsAnError() {
        XCTAssertThrowsError(try SQLiteCompositionStore(path: "/nonexistent-dir/x/state.sqlite"))
    }
}
