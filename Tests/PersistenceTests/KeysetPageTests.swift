// Keyset pages on every store (in memory, SQLite, PostgreSQL): paging by ARN in byte order
// gives every row exactly once, whatever the page size and wherever a page starts; the
// composition pages filter by stage; counts are what the quotas check.
import APIModels
import Foundation
import Persistence
import TestSupport
import XCTest

final class KeysetPageTests: XCTestCase {
    static let account = "arn:aws:ivs:us-east-1:123456789012"

    /// IDs whose byte order differs from insertion order and from a case-folding order.
    static func ids(_ count: Int, seed: UInt64) -> [String] {
        var generator = SeededGenerator(seed: seed)
        let prefixes = ["A", "a", "Z", "z", "0", "_"]
        return (0..<count).map { String(format: "%@%011d", prefixes[$0 % prefixes.count], $0) }.shuffled(using: &generator)
    }

    /// Reads every page of `read` at `limit`, checking each page's size and token.
    func everyPage<Item>(limit: Int, _ read: (String?, Int) async throws -> KeysetPage<Item>,
                         key: (Item) -> String) async throws -> [String] {
        var keys: [String] = [], after: String?, pages = 0
        repeat {
            let page = try await read(after, limit)
            XCTAssertLessThanOrEqual(page.items.count, limit)
            if let next = page.nextKey {
                XCTAssertEqual(page.items.count, limit)
                XCTAssertEqual(next, page.items.last.map(key))
            }
            keys += page.items.map(key)
            after = page.nextKey
            pages += 1
        } while after != nil && pages < 10_000
        return keys
    }

    func exercise(_ store: some CompositionStore) async throws {
        let stageIds = Self.ids(53, seed: 1)
        for id in stageIds {
            try await store.putStage(StoredStage(stage: Stage(arn: "\(Self.account):stage/\(id)", name: id, tags: [:]), sourcePath: ""))
        }
        let stageArns = stageIds.map { "\(Self.account):stage/\($0)" }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        for limit in [1, 2, 5, 52, 53, 54, 1_000] {
            let keys = try await everyPage(limit: limit, { try await store.stages(after: $0, limit: $1) }, key: \.stage.arn)
            XCTAssertEqual(keys, stageArns, "limit \(limit)")
        }
        let stageCount = try await store.count(.stage)
        XCTAssertEqual(stageCount, 53)
        // A page may start after any key, issued or not.
        for after in ["", "\u{1}", "\(Self.account):stage/a", "\(Self.account):stage/zzz", "\u{10FFFF}"] {
            let page = try await store.stages(after: after, limit: 3)
            let expected = stageArns.filter { after.utf8.lexicographicallyPrecedes($0.utf8) }
            XCTAssertEqual(page.items.map(\.stage.arn), Array(expected.prefix(3)), after.debugDescription)
            XCTAssertEqual(page.nextKey, expected.count > 3 ? expected[2] : nil, after.debugDescription)
        }
        // A limit out of range reads one row, or the store's most.
        let clamped = try await store.stages(after: nil, limit: 0)
        XCTAssertEqual(clamped.items.map(\.stage.arn), [stageArns[0]])

        // Every other resource kind.
        let ids = Self.ids(17, seed: 2)
        for id in ids {
            try await store.putEncoderConfiguration(EncoderConfiguration(arn: "\(Self.account):encoder-configuration/\(id)", name: id,
                                                                         video: Video().withDefaults(), tags: [:]))
            try await store.putStorageConfiguration(StorageConfiguration(arn: "\(Self.account):storage-configuration/\(id)", name: id,
                                                                         s3: S3StorageConfiguration(bucketName: "b"), tags: [:]))
            try await store.putIngestConfiguration(StoredIngestConfiguration(configuration: IngestConfiguration(
                name: id, arn: "\(Self.account):ingest-configuration/\(id)", ingestProtocol: .rtmps, streamKey: "key-\(id)",
                stageArn: "", participantId: id, state: .inactive, userId: nil, redundantIngest: false, attributes: nil, tags: [:]),
                insecureIngest: false))
            try await store.putPublicKey(StoredPublicKey(publicKey: PublicKey(arn: "\(Self.account):public-key/\(id)", name: id,
                                                                             publicKeyMaterial: "", fingerprint: id, tags: [:])))
        }
        func arns(_ type: String) -> [String] { ids.map { "\(Self.account):\(type)/\($0)" }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }
        for limit in [1, 4, 17, 100] {
            var keys = try await everyPage(limit: limit, { try await store.encoderConfigurations(after: $0, limit: $1) }, key: \.arn)
            XCTAssertEqual(keys, arns("encoder-configuration"))
            keys = try await everyPage(limit: limit, { try await store.storageConfigurations(after: $0, limit: $1) }, key: \.arn)
            XCTAssertEqual(keys, arns("storage-configuration"))
            keys = try await everyPage(limit: limit, { try await store.ingestConfigurations(after: $0, limit: $1) }, key: \.arn)
            XCTAssertEqual(keys, arns("ingest-configuration"))
            keys = try await everyPage(limit: limit, { try await store.publicKeys(after: $0, limit: $1) }, key: \.arn)
            XCTAssertEqual(keys, arns("public-key"))
        }
        for (kind, expected) in [(DocumentTable.encoderConfiguration, 17), (.storageConfiguration, 17), (.ingestConfiguration, 17),
                                 (.publicKey, 17), (.composition, 0)] {
            let count = try await store.count(kind)
            XCTAssertEqual(count, expected, "\(kind)")
        }

        // Compositions, all of them or one stage's.
        let compositionIds = Self.ids(23, seed: 3)
        for (index, id) in compositionIds.enumerated() {
            try await store.putComposition(StoredComposition(composition: Composition(
                arn: "\(Self.account):composition/\(id)", stageArn: stageArns[index % 3], state: .active, layout: .defaultGrid,
                destinations: [], tags: [:])))
        }
        let compositionArns = compositionIds.map { "\(Self.account):composition/\($0)" }
        for limit in [1, 3, 23, 100] {
            let all = try await everyPage(limit: limit, { try await store.compositions(stageArn: nil, after: $0, limit: $1) }, key: \.arn)
            XCTAssertEqual(all, compositionArns.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
            let ofStage = try await everyPage(limit: limit, { try await store.compositions(stageArn: stageArns[1], after: $0, limit: $1) },
                                              key: \.arn)
            let expected = compositionIds.enumerated().filter { $0.offset % 3 == 1 }.map { "\(Self.account):composition/\($0.element)" }
            XCTAssertEqual(ofStage, expected.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        }
        let compositionCount = try await store.count(.composition)
        XCTAssertEqual(compositionCount, 23)

        // Rows deleted or added between pages neither repeat nor get skipped.
        let first = try await store.stages(after: nil, limit: 10)
        _ = try await store.deleteStage(arn: first.items[9].stage.arn)
        try await store.putStage(StoredStage(stage: Stage(arn: "\(Self.account):stage/" + "\u{1}", name: "", tags: [:]), sourcePath: ""))
        let rest = try await everyPage(limit: 7, { try await store.stages(after: $0 ?? first.nextKey, limit: $1) }, key: \.stage.arn)
        XCTAssertEqual(first.items.map(\.stage.arn) + rest, stageArns)
    }

    func testInMemoryStore() async throws { try await exercise(InMemoryCompositionStore()) }
    func testSQLiteStore() async throws { try await exercise(try SQLiteCompositionStore()) }
    func testPostgreSQLStore() async throws { try await PostgresStores.with { store in try await exercise(store) } }
}
