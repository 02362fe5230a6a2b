// Keyset pages of sessions, participants and events on every store (in memory, SQLite,
// PostgreSQL): every row once, in the List order, whatever the page size; filters applied
// while reading; page keys that sort as the rows and parse back only from what was issued;
// and SQLite serves each page from an index, not a sort of the whole list.
import APIModels
import Foundation
import GRDB
import Persistence
import TestSupport
import XCTest

final class SessionPageTests: XCTestCase {
    static let stageArn = "arn:aws:ivs:us-east-1:123456789012:stage/SSSSSSSSSSSS"
    static let sessionId = "st-PPPPPPPPPPPPP"

    /// Reads every page at `limit`, checking each page's size and that its key is its last row's.
    func everyPage<Item>(limit: Int, _ read: (String?, Int) async throws -> KeysetPage<Item>) async throws -> [Item] {
        var items: [Item] = [], after: String?, pages = 0
        repeat {
            let page = try await read(after, limit)
            XCTAssertLessThanOrEqual(page.items.count, limit)
            if page.nextKey != nil { XCTAssertEqual(page.items.count, limit) }
            items += page.items
            after = page.nextKey
            pages += 1
        } while after != nil && pages < 10_000
        return items
    }

    static func participant(_ index: Int) -> StoredParticipant {
        let states: [ParticipantState] = [.connected, .disconnected]
        return StoredParticipant(stageArn: stageArn, sessionId: sessionId, participant: Participant(
            participantId: String(format: "%@%04d", ["z", "A", "a", "_"][index % 4], 9_999 - index), userId: "user-\(index % 7)",
            state: states[index % 2], firstJoinTime: nil, attributes: [:], published: index % 3 == 0,
            recordingState: index % 300 == 299 ? .failed : .active, protocol: .whip))
    }

    func exercise(_ store: some CompositionStore) async throws {
        // Sessions: start times tie in threes (and go below zero); IDs differ in case and
        // punctuation, whose byte order is not a locale's.
        var generator = SeededGenerator(seed: 8)
        var sessions: [StoredStageSession] = []
        for index in (0..<40).shuffled(using: &generator) {
            let id = String(format: "st-%@%012d", ["A", "a", "Z", "_"][index % 4], index)
            let session = StoredStageSession(stageArn: Self.stageArn, session: StageSession(
                sessionId: id, startTime: APITimestamp(secondsSince1970: Int64(index / 3) - 5)))
            try await store.putStageSession(session)
            sessions.append(session)
        }
        try await store.putStageSession(StoredStageSession(stageArn: Self.stageArn + "x", session: StageSession(
            sessionId: "st-A000000000001", startTime: APITimestamp(secondsSince1970: 3))))
        let newestFirst = sessions.sorted { left, right in
            let (l, r) = (StageSessionPosition(left), StageSessionPosition(right))
            return l.startTime != r.startTime ? l.startTime > r.startTime : l.sessionId.utf8.lexicographicallyPrecedes(r.sessionId.utf8)
        }
        for limit in [1, 2, 3, 39, 40, 41, 1_000] {
            let listed = try await everyPage(limit: limit) { after, limit in
                try await store.stageSessions(stageArn: Self.stageArn, after: after.flatMap(PageKey.session(parsing:)), limit: limit)
            }
            XCTAssertEqual(listed, newestFirst, "sessions, limit \(limit)")
        }
        // A page may start at any position, issued or not.
        for position in [StageSessionPosition(startTime: 2, sessionId: "st-Z"), StageSessionPosition(startTime: 100, sessionId: ""),
                         StageSessionPosition(startTime: -5, sessionId: "st-_"), StageSessionPosition(startTime: .min, sessionId: "")] {
            let page = try await store.stageSessions(stageArn: Self.stageArn, after: position, limit: 4)
            let key = PageKey.session(position)
            let expected = newestFirst.filter { key.utf8.lexicographicallyPrecedes(PageKey.session(StageSessionPosition($0)).utf8) }
            XCTAssertEqual(page.items, Array(expected.prefix(4)), "\(position)")
        }

        // Participants: join order, updates keep their place, filters (one in 300 fails).
        var people: [StoredParticipant] = []
        for index in 0..<700 {
            let participant = Self.participant(index)
            try await store.putParticipant(participant)
            people.append(participant)
        }
        for index in stride(from: 0, to: 700, by: 50) {
            people[index].participant.state = .disconnected
            try await store.putParticipant(people[index])
        }
        let filters = [ParticipantFilter.all, ParticipantFilter(userId: "user-3"), ParticipantFilter(published: true),
                       ParticipantFilter(state: .connected), ParticipantFilter(recordingState: .failed),
                       ParticipantFilter(recordingState: .stopped), ParticipantFilter(userId: "user-3", published: false)]
        for limit in [1, 2, 7, 100, 1_000] {
            for filter in filters {
                let listed = try await everyPage(limit: limit) { after, limit in
                    try await store.participants(stageArn: Self.stageArn, sessionId: Self.sessionId, matching: filter,
                                                 afterJoinOrder: after.flatMap(PageKey.sequence(parsing:)), limit: limit)
                }
                XCTAssertEqual(listed, people.filter { filter.matches($0.participant) }, "participants, limit \(limit), \(filter)")
            }
        }
        let otherSession = try await store.participants(stageArn: Self.stageArn, sessionId: "st-QQQQQQQQQQQQQ", matching: .all,
                                                        afterJoinOrder: nil, limit: 10)
        XCTAssertEqual(otherSession.items, [])

        // Events: one participant's, interleaved with another's, in the order appended.
        var events: [ParticipantEvent] = []
        for index in 0..<90 {
            let event = ParticipantEvent(name: .joined, participantId: index % 3 == 0 ? "other" : "mine",
                                         eventTime: APITimestamp(secondsSince1970: Int64(index)))
            try await store.appendParticipantEvent(stageArn: Self.stageArn, sessionId: Self.sessionId, event)
            if index % 3 != 0 { events.append(event) }
        }
        for limit in [1, 2, 59, 60, 61, 1_000] {
            let listed = try await everyPage(limit: limit) { after, limit in
                try await store.participantEvents(stageArn: Self.stageArn, sessionId: Self.sessionId, participantId: "mine",
                                                  afterSequence: after.flatMap(PageKey.sequence(parsing:)), limit: limit)
            }
            XCTAssertEqual(listed, events, "events, limit \(limit)")
        }
        // Events appended between pages come after, none repeated or skipped.
        let first = try await store.participantEvents(stageArn: Self.stageArn, sessionId: Self.sessionId, participantId: "mine",
                                                      afterSequence: nil, limit: 10)
        let late = ParticipantEvent(name: .left, participantId: "mine", eventTime: APITimestamp(secondsSince1970: 1_000))
        try await store.appendParticipantEvent(stageArn: Self.stageArn, sessionId: Self.sessionId, late)
        let rest = try await everyPage(limit: 25) { after, limit in
            try await store.participantEvents(stageArn: Self.stageArn, sessionId: Self.sessionId, participantId: "mine",
                                              afterSequence: (after ?? first.nextKey).flatMap(PageKey.sequence(parsing:)), limit: limit)
        }
        XCTAssertEqual(first.items + rest, events + [late])
    }

    func testInMemoryStore() async throws { try await exercise(InMemoryCompositionStore()) }
    func testSQLiteStore() async throws { try await exercise(try SQLiteCompositionStore()) }
    func testPostgreSQLStore() async throws { try await PostgresStores.with { store in try await exercise(store) } }

    func testPageKeysSortAsTheRowsAndParseOnlyWhatWasIssued() {
        for value: Int64 in [0, 1, 9, 10, 1_000_000, .max] {
            XCTAssertEqual(PageKey.sequence(parsing: PageKey.sequence(value)), value)
            XCTAssertEqual(PageKey.sequence(value).utf8.count, 20)
        }
        let positions = [Int64.max, 1_700_000_000, 1, 0, -1, .min].flatMap { start in
            ["st-A", "st-B", "st-a", "st-\u{E9}"].map { StageSessionPosition(startTime: start, sessionId: $0) }
        }
        for position in positions { XCTAssertEqual(PageKey.session(parsing: PageKey.session(position)), position) }
        let keys = positions.map(PageKey.session)
        XCTAssertEqual(keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }, keys, "newest first, then by ID bytes")
        for key in ["", "1", "09223372036854775808", "-0000000000000000001", "+0000000000000000001", "0000000000000000001x", "9223372036854775808",
                    "00000000000000000001 ", "0000000000000000000\u{661}", "٠٠٠٠٠٠٠٠٠٠٠٠٠٠٠٠٠٠٠١"] {
            XCTAssertNil(PageKey.sequence(parsing: key), key)
        }
        for key in ["", "0000000000000000000", "18446744073709551616", "1844674407370955161\u{661}st-A", "x0000000000000000000"] {
            XCTAssertNil(PageKey.session(parsing: key), key)
        }
    }

    /// SQLite answers each page from an index in the page's order: no sort of the whole list.
    func testSQLitePagesFollowAnIndex() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pages-\(UUID()).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try SQLiteCompositionStore(path: path)
        let database = try DatabaseQueue(path: path)
        let queries = [
            "SELECT startTime, sessionId, document FROM stageSession WHERE stageArn = 'a' ORDER BY startTime DESC, sessionId LIMIT 2",
            """
            SELECT startTime, sessionId, document FROM stageSession WHERE stageArn = 'a' AND startTime <= 5
              AND (startTime < 5 OR sessionId > 'b') ORDER BY startTime DESC, sessionId LIMIT 2
            """,
            "SELECT joinOrder, document FROM participant WHERE stageArn = 'a' AND sessionId = 'b' AND joinOrder > 3 ORDER BY joinOrder LIMIT 2",
            """
            SELECT sequence, document FROM participantEvent
            WHERE stageArn = 'a' AND sessionId = 'b' AND participantId = 'c' AND sequence > 3 ORDER BY sequence LIMIT 2
            """,
        ]
        try database.read { db in
            for query in queries {
                let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + query).map { $0["detail"] as String }.joined(separator: "; ")
                XCTAssertFalse(plan.contains("TEMP B-TREE"), "\(query): \(plan)")
                XCTAssertTrue(plan.contains("USING INDEX") || plan.contains("USING COVERING INDEX"), "\(query): \(plan)")
            }
        }
    }
}
