// Quotas on what Create calls add, and List operations that read the store a page at a
// time: paging gives every item once, in order; a hostile nextToken is a ValidationException;
// and one page of a big table asks the store for a page, never the table (a store that
// counts what it hands out).
import APIModels
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import EventSinks
import Persistence
import PostgresNIO
import PostgresStore
@testable import Server
import Synchronization
import TestSupport
import XCTest

final class ListPagingTests: XCTestCase {
    static let account = "arn:aws:ivs:us-east-1:123456789012"

    func makeApp(store: any CompositionStore, quotas: ServerConfiguration.Quotas = .init()) async throws -> some ApplicationProtocol {
        let configuration = ServerConfiguration(
            stages: [.init(id: "twoPeople", source: CompositionManagerTests.fixtures.appendingPathComponent("two-people").path)],
            buckets: ["rec-bucket": .directory(FileManager.default.temporaryDirectory.appendingPathComponent("rec-\(UUID())").path)],
            quotas: quotas)
        return try await buildApplication(configuration: configuration, dependencies: ServerDependencies(
            logger: Logger(label: "test"), events: InMemoryEventSink(), launcher: FakePipelineLauncher(), inMemoryStore: true),
            store: store)
    }

    static func json(_ buffer: ByteBuffer) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(buffer.readableBytesView)) as? [String: Any])
    }

    static func stage(_ id: String) -> StoredStage {
        StoredStage(stage: Stage(arn: "\(account):stage/\(id)", name: id, tags: [:]), sourcePath: "")
    }

    /// Stage IDs on both sides of the configured `twoPeople` in byte order, stored shuffled.
    static func stageIds(_ count: Int) -> [String] {
        var generator = SeededGenerator(seed: 38)
        return (0..<count).map { String(format: "%@%011d", $0.isMultiple(of: 2) ? "A" : "z", $0) }.shuffled(using: &generator)
    }

    func testCreateBeyondAQuotaIsServiceQuotaExceeded() async throws {
        let quotas = ServerConfiguration.Quotas(encoderConfigurations: 1, storageConfigurations: 1, ingestConfigurations: 1, stages: 2)
        try await makeApp(store: InMemoryCompositionStore(), quotas: quotas).test(.router) { client in
            let calls: [(uri: String, body: String, allowed: Int, message: String)] = [
                ("/CreateStage", #"{"name":"s"}"#, 2, "stages: the quota of 2 is reached"),
                ("/CreateEncoderConfiguration", #"{"name":"e"}"#, 1, "encoder configurations: the quota of 1 is reached"),
                ("/CreateStorageConfiguration", #"{"s3":{"bucketName":"rec-bucket"}}"#, 1, "storage configurations: the quota of 1 is reached"),
                ("/CreateIngestConfiguration", #"{"ingestProtocol":"RTMPS"}"#, 1, "ingest configurations: the quota of 1 is reached"),
            ]
            for call in calls {
                for _ in 0..<call.allowed {
                    try await client.execute(uri: call.uri, method: .post, body: ByteBuffer(string: call.body)) { response in
                        XCTAssertEqual(response.status, .ok, call.uri)
                    }
                }
                try await client.execute(uri: call.uri, method: .post, body: ByteBuffer(string: call.body)) { response in
                    XCTAssertEqual(response.status.code, 402, call.uri)
                    XCTAssertEqual(response.headers[HTTPField.Name("x-amzn-ErrorType")!], "ServiceQuotaExceededException", call.uri)
                    XCTAssertEqual(try Self.json(response.body)["message"] as? String, call.message)
                }
            }
            // Deleting one makes room again.
            let arn = try await client.execute(uri: "/ListStages", method: .post, body: ByteBuffer(string: #"{"maxResults":1}"#)) { response in
                let stages = try XCTUnwrap(try Self.json(response.body)["stages"] as? [[String: Any]])
                return try XCTUnwrap(stages.first?["arn"] as? String)
            }
            try await client.execute(uri: "/DeleteStage", method: .post, body: ByteBuffer(string: #"{"arn":"\#(arn)"}"#)) { response in
                XCTAssertEqual(response.status, .ok)
            }
            try await client.execute(uri: "/CreateStage", method: .post, body: ByteBuffer(string: "{}")) { response in
                XCTAssertEqual(response.status, .ok)
            }
        }
    }

    func testQuotasStagesIsReadFromTheConfigurationFile() throws {
        let decoded = try JSONDecoder().decode(ServerConfiguration.Quotas.self, from: Data(#"{"stages":7}"#.utf8))
        XCTAssertEqual(decoded.stages, 7)
        XCTAssertEqual(try JSONDecoder().decode(ServerConfiguration.Quotas.self, from: Data("{}".utf8)).stages, 1_000)
        var configuration = ServerConfiguration(stateDirectory: "/tmp/x")
        configuration.quotas.stages = -1
        XCTAssertTrue(configuration.validate().contains("quotas.stages: must not be negative"))
    }

    /// Every page of ListStages at `maxResults`, following nextToken to the end.
    static func listAllStages(_ client: some TestClientProtocol, maxResults: Int?) async throws -> (arns: [String], pages: Int) {
        var arns: [String] = [], token: String?, pages = 0
        repeat {
            var request: [String: Any] = [:]
            if let maxResults { request["maxResults"] = maxResults }
            if let token { request["nextToken"] = token }
            let body = try JSONSerialization.data(withJSONObject: request)
            token = try await client.execute(uri: "/ListStages", method: .post, body: ByteBuffer(bytes: body)) { response in
                XCTAssertEqual(response.status, .ok)
                let json = try Self.json(response.body)
                let stages = try XCTUnwrap(json["stages"] as? [[String: Any]])
                XCTAssertLessThanOrEqual(stages.count, maxResults ?? 50)
                arns += stages.compactMap { $0["arn"] as? String }
                return json["nextToken"] as? String
            }
            pages += 1
        } while token != nil && pages < 1_000
        return (arns, pages)
    }

    func pagesThroughEveryStageOnceInOrder(_ store: some CompositionStore) async throws {
        let ids = Self.stageIds(61)
        for id in ids { try await store.putStage(Self.stage(id)) }
        let expected = (ids.map { "\(Self.account):stage/\($0)" } + ["\(Self.account):stage/twoPeople"]).sorted()
        try await makeApp(store: store).test(.router) { client in
            for maxResults in [1, 2, 7, 61, 62, 100, nil] {
                let listed = try await Self.listAllStages(client, maxResults: maxResults)
                XCTAssertEqual(listed.arns, expected, "maxResults \(maxResults.map(String.init) ?? "default")")
                let size = maxResults ?? 50
                XCTAssertEqual(listed.pages, max(1, (expected.count + size - 1) / size), "maxResults \(size)")
            }
        }
    }

    func testListStagesPagesThroughEveryStageOnceInOrderInMemory() async throws {
        try await pagesThroughEveryStageOnceInOrder(InMemoryCompositionStore())
    }

    func testListStagesPagesThroughEveryStageOnceInOrderInSQLite() async throws {
        try await pagesThroughEveryStageOnceInOrder(try SQLiteCompositionStore())
    }

    func testAHostileNextTokenIsAValidationError() async throws {
        try await hostileTokens(InMemoryCompositionStore())
    }

    func testAHostileNextTokenIsAValidationErrorOnPostgreSQL() async throws {
        let url = try PostgresDatabaseURL.parse(try PostgresTestServer.shared().database()).get()
        var logger = Logger(label: "postgres")
        logger.logLevel = .warning
        let client = PostgresClient(configuration: url.clientConfiguration(), backgroundLogger: logger)
        let pool = Task { await client.run() }
        defer { pool.cancel() }
        let store = PostgresCompositionStore(client: client, logger: logger)
        try await store.migrate()
        try await hostileTokens(store)
    }

    func hostileTokens(_ store: some CompositionStore) async throws {
        for id in Self.stageIds(5) { try await store.putStage(Self.stage(id)) }
        try await makeApp(store: store).test(.router) { client in
            func list(_ operation: String, _ token: String) async throws -> (HTTPResponse.Status, String?) {
                let body = try JSONSerialization.data(withJSONObject: ["nextToken": token, "maxResults": 2])
                return try await client.execute(uri: "/\(operation)", method: .post, body: ByteBuffer(bytes: body)) { response in
                    (response.status, response.headers[HTTPField.Name("x-amzn-ErrorType")!])
                }
            }
            let operations = ["ListStages", "ListEncoderConfigurations", "ListStorageConfigurations", "ListIngestConfigurations",
                              "ListPublicKeys", "ListCompositions"]
            for operation in operations {
                for token in ["bm9wZQ==", "!!!", "djE", String(repeating: "A", count: 1_024), String(repeating: "/", count: 1_025)] {
                    let (status, type) = try await list(operation, token)
                    XCTAssertEqual(status, .badRequest, "\(operation) \(token.prefix(20))")
                    XCTAssertEqual(type, "ValidationException", "\(operation) \(token.prefix(20))")
                }
                // Well-formed tokens naming keys never issued: a page after that key, or none.
                let (status, type) = try await list(operation, Pagination.encodeToken(lastKey: "a\u{0}"))
                XCTAssertEqual(status, .badRequest, "\(operation) NUL")
                XCTAssertEqual(type, "ValidationException", "\(operation) NUL")
                for key in ["", "\u{1}", "\u{10FFFF}", "arn:aws:ivs:us-east-1:123456789012:stage/A", String(repeating: "\u{FF}", count: 300)] {
                    let (status, _) = try await list(operation, Pagination.encodeToken(lastKey: key))
                    XCTAssertEqual(status, .ok, "\(operation) \(key.debugDescription.prefix(20))")
                }
            }
            // Random tokens within the model's pattern: an answer, never a server error.
            var generator = SeededGenerator(seed: 6)
            for token in PageTokens.random(count: 200, seed: 6) {
                let (status, _) = try await list(operations.randomElement(using: &generator)!, token)
                XCTAssertTrue(status == .ok || status == .badRequest, "\(token): \(status)")
            }
        }
    }

    /// The store counts what it hands out: one page of a 20,000-stage table reads a few rows.
    func testAPageReadsAPageFromTheStoreNotTheTable() async throws {
        let base = InMemoryCompositionStore()
        for id in Self.stageIds(20_000) { try await base.putStage(Self.stage(id)) }
        for index in 0..<300 {
            let id = String(format: "E%011d", index)
            try await base.putEncoderConfiguration(EncoderConfiguration(arn: "\(Self.account):encoder-configuration/\(id)", name: id,
                                                                        video: Video().withDefaults(), tags: [:]))
            try await base.putStorageConfiguration(StorageConfiguration(arn: "\(Self.account):storage-configuration/\(id)", name: id,
                                                                        s3: S3StorageConfiguration(bucketName: "rec-bucket"), tags: [:]))
            try await base.putIngestConfiguration(StoredIngestConfiguration(configuration: IngestConfiguration(
                name: id, arn: "\(Self.account):ingest-configuration/\(id)", ingestProtocol: .rtmps, streamKey: "key-\(id)",
                stageArn: "", participantId: id, state: .inactive, userId: nil, redundantIngest: false, attributes: nil, tags: [:]),
                insecureIngest: false))
            try await base.putPublicKey(StoredPublicKey(publicKey: PublicKey(arn: "\(Self.account):public-key/\(id)", name: id,
                                                                            publicKeyMaterial: "", fingerprint: id, tags: [:])))
        }
        let store = CountingStore(base)
        try await makeApp(store: store).test(.router) { client in
            for operation in ["ListStages", "ListEncoderConfigurations", "ListStorageConfigurations", "ListIngestConfigurations",
                              "ListPublicKeys"] {
                store.reset()
                let token = try await client.execute(uri: "/\(operation)", method: .post, body: ByteBuffer(string: #"{"maxResults":1}"#)) { response in
                    XCTAssertEqual(response.status, .ok, operation)
                    return try Self.json(response.body)["nextToken"] as? String
                }
                XCTAssertNotNil(token, operation)
                var read = store.read
                XCTAssertEqual(read.wholeLists, [], operation)
                XCTAssertLessThanOrEqual(read.rows, 3, operation)
                // The next page costs the same.
                store.reset()
                try await client.execute(uri: "/\(operation)", method: .post,
                                         body: ByteBuffer(string: #"{"maxResults":1,"nextToken":"\#(token ?? "")"}"#)) { response in
                    XCTAssertEqual(response.status, .ok, operation)
                }
                read = store.read
                XCTAssertEqual(read.wholeLists, [], operation)
                XCTAssertLessThanOrEqual(read.rows, 3, operation)
            }
        }
    }
}

/// Forwards every call to `base`, counting the rows the List reads hand out and naming the
/// reads of a whole table or list.
final class CountingStore<Base: CompositionStore>: CompositionStore {
    struct Read: Sendable {
        var rows = 0
        var wholeLists: [String] = []
    }

    let base: Base
    private let counts = Mutex(Read())

    init(_ base: Base) { self.base = base }

    var read: Read { counts.withLock { $0 } }
    func reset() { counts.withLock { $0 = Read() } }
    private func note(page rows: Int) { counts.withLock { $0.rows += rows } }
    private func note(wholeList name: String, rows: Int) {
        counts.withLock {
            $0.rows += rows
            $0.wholeLists.append(name)
        }
    }

    func putEncoderConfiguration(_ value: EncoderConfiguration) async throws(PersistenceError) {
        try await base.putEncoderConfiguration(value)
    }
    func encoderConfiguration(arn: String) async throws(PersistenceError) -> EncoderConfiguration? {
        try await base.encoderConfiguration(arn: arn)
    }
    func encoderConfigurations() async throws(PersistenceError) -> [EncoderConfiguration] {
        let rows = try await base.encoderConfigurations()
        note(wholeList: "encoderConfigurations", rows: rows.count)
        return rows
    }
    func encoderConfigurations(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<EncoderConfiguration> {
        let page = try await base.encoderConfigurations(after: after, limit: limit)
        note(page: page.items.count)
        return page
    }
    func deleteEncoderConfiguration(arn: String) async throws(PersistenceError) -> Bool {
        try await base.deleteEncoderConfiguration(arn: arn)
    }
    func putStorageConfiguration(_ value: StorageConfiguration) async throws(PersistenceError) {
        try await base.putStorageConfiguration(value)
    }
    func storageConfiguration(arn: String) async throws(PersistenceError) -> StorageConfiguration? {
        try await base.storageConfiguration(arn: arn)
    }
    func storageConfigurations() async throws(PersistenceError) -> [StorageConfiguration] {
        let rows = try await base.storageConfigurations()
        note(wholeList: "storageConfigurations", rows: rows.count)
        return rows
    }
    func storageConfigurations(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StorageConfiguration> {
        let page = try await base.storageConfigurations(after: after, limit: limit)
        note(page: page.items.count)
        return page
    }
    func deleteStorageConfiguration(arn: String) async throws(PersistenceError) -> Bool {
        try await base.deleteStorageConfiguration(arn: arn)
    }
    func putStage(_ value: StoredStage) async throws(PersistenceError) {
        try await base.putStage(value)
    }
    func stage(arn: String) async throws(PersistenceError) -> StoredStage? {
        try await base.stage(arn: arn)
    }
    func stages() async throws(PersistenceError) -> [StoredStage] {
        let rows = try await base.stages()
        note(wholeList: "stages", rows: rows.count)
        return rows
    }
    func stages(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StoredStage> {
        let page = try await base.stages(after: after, limit: limit)
        note(page: page.items.count)
        return page
    }
    func deleteStage(arn: String) async throws(PersistenceError) -> Bool {
        try await base.deleteStage(arn: arn)
    }
    func putIngestConfiguration(_ value: StoredIngestConfiguration) async throws(PersistenceError) {
        try await base.putIngestConfiguration(value)
    }
    func ingestConfiguration(arn: String) async throws(PersistenceError) -> StoredIngestConfiguration? {
        try await base.ingestConfiguration(arn: arn)
    }
    func ingestConfiguration(streamKey: String) async throws(PersistenceError) -> StoredIngestConfiguration? {
        try await base.ingestConfiguration(streamKey: streamKey)
    }
    func ingestConfigurations() async throws(PersistenceError) -> [StoredIngestConfiguration] {
        let rows = try await base.ingestConfigurations()
        note(wholeList: "ingestConfigurations", rows: rows.count)
        return rows
    }
    func ingestConfigurations(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StoredIngestConfiguration> {
        let page = try await base.ingestConfigurations(after: after, limit: limit)
        note(page: page.items.count)
        return page
    }
    func deleteIngestConfiguration(arn: String) async throws(PersistenceError) -> Bool {
        try await base.deleteIngestConfiguration(arn: arn)
    }
    func putStageSession(_ value: StoredStageSession) async throws(PersistenceError) {
        try await base.putStageSession(value)
    }
    func stageSession(stageArn: String, sessionId: String) async throws(PersistenceError) -> StoredStageSession? {
        try await base.stageSession(stageArn: stageArn, sessionId: sessionId)
    }
    func stageSessions(stageArn: String) async throws(PersistenceError) -> [StoredStageSession] {
        let rows = try await base.stageSessions(stageArn: stageArn)
        note(wholeList: "stageSessions", rows: rows.count)
        return rows
    }
    func stageSessions(stageArn: String, after: StageSessionPosition?, limit: Int) async throws(PersistenceError)
        -> KeysetPage<StoredStageSession> {
        let page = try await base.stageSessions(stageArn: stageArn, after: after, limit: limit)
        note(page: page.items.count)
        return page
    }
    func openStageSessions() async throws(PersistenceError) -> [StoredStageSession] {
        let rows = try await base.openStageSessions()
        note(wholeList: "openStageSessions", rows: rows.count)
        return rows
    }
    func openStageSession(stageArn: String) async throws(PersistenceError) -> StoredStageSession? {
        try await base.openStageSession(stageArn: stageArn)
    }
    func putParticipant(_ value: StoredParticipant) async throws(PersistenceError) {
        try await base.putParticipant(value)
    }
    func participant(stageArn: String, sessionId: String, participantId: String) async throws(PersistenceError) -> StoredParticipant? {
        try await base.participant(stageArn: stageArn, sessionId: sessionId, participantId: participantId)
    }
    func participants(stageArn: String, sessionId: String) async throws(PersistenceError) -> [StoredParticipant] {
        let rows = try await base.participants(stageArn: stageArn, sessionId: sessionId)
        note(wholeList: "participants", rows: rows.count)
        return rows
    }
    func participants(stageArn: String, sessionId: String, matching filter: ParticipantFilter, afterJoinOrder: Int64?,
                      limit: Int) async throws(PersistenceError) -> KeysetPage<StoredParticipant> {
        let page = try await base.participants(stageArn: stageArn, sessionId: sessionId, matching: filter, afterJoinOrder: afterJoinOrder,
                                               limit: limit)
        note(page: page.items.count)
        return page
    }
    func appendParticipantEvent(_ value: StoredParticipantEvent) async throws(PersistenceError) {
        try await base.appendParticipantEvent(value)
    }
    func participantEvents(stageArn: String, sessionId: String, participantId: String) async throws(PersistenceError) -> [ParticipantEvent] {
        let rows = try await base.participantEvents(stageArn: stageArn, sessionId: sessionId, participantId: participantId)
        note(wholeList: "participantEvents", rows: rows.count)
        return rows
    }
    func participantEvents(stageArn: String, sessionId: String, participantId: String, afterSequence: Int64?,
                           limit: Int) async throws(PersistenceError) -> KeysetPage<ParticipantEvent> {
        let page = try await base.participantEvents(stageArn: stageArn, sessionId: sessionId, participantId: participantId,
                                                    afterSequence: afterSequence, limit: limit)
        note(page: page.items.count)
        return page
    }
    func pruneStageSessions(endedBefore seconds: Int64) async throws(PersistenceError) {
        try await base.pruneStageSessions(endedBefore: seconds)
    }
    func claimFleetNonce(_ nonce: String, until: Int64, now: Int64) async throws(PersistenceError) -> Bool {
        try await base.claimFleetNonce(nonce, until: until, now: now)
    }
    func putRevocation(key: String, until seconds: Int64) async throws(PersistenceError) {
        try await base.putRevocation(key: key, until: seconds)
    }
    func revocation(key: String) async throws(PersistenceError) -> Int64? {
        try await base.revocation(key: key)
    }
    func pruneRevocations(expiredBefore seconds: Int64) async throws(PersistenceError) {
        try await base.pruneRevocations(expiredBefore: seconds)
    }
    func putPublicKey(_ value: StoredPublicKey) async throws(PersistenceError) {
        try await base.putPublicKey(value)
    }
    func publicKey(arn: String) async throws(PersistenceError) -> StoredPublicKey? {
        try await base.publicKey(arn: arn)
    }
    func publicKeys() async throws(PersistenceError) -> [StoredPublicKey] {
        let rows = try await base.publicKeys()
        note(wholeList: "publicKeys", rows: rows.count)
        return rows
    }
    func publicKeys(after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StoredPublicKey> {
        let page = try await base.publicKeys(after: after, limit: limit)
        note(page: page.items.count)
        return page
    }
    func deletePublicKey(arn: String) async throws(PersistenceError) -> Bool {
        try await base.deletePublicKey(arn: arn)
    }
    func putComposition(_ value: StoredComposition) async throws(PersistenceError) {
        try await base.putComposition(value)
    }
    func composition(arn: String) async throws(PersistenceError) -> StoredComposition? {
        try await base.composition(arn: arn)
    }
    func compositions() async throws(PersistenceError) -> [StoredComposition] {
        let rows = try await base.compositions()
        note(wholeList: "compositions", rows: rows.count)
        return rows
    }
    func compositions(stageArn: String?, after: String?, limit: Int) async throws(PersistenceError) -> KeysetPage<StoredComposition> {
        let page = try await base.compositions(stageArn: stageArn, after: after, limit: limit)
        note(page: page.items.count)
        return page
    }
    func deleteComposition(arn: String) async throws(PersistenceError) -> Bool {
        try await base.deleteComposition(arn: arn)
    }
    func count(_ kind: DocumentTable) async throws(PersistenceError) -> Int {
        try await base.count(kind)
    }
}
