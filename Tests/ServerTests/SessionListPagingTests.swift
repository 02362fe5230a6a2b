// ListStageSessions, ListParticipants and ListParticipantEvents read the store a page at a
// time: paging gives every item once, in the API's order (sessions newest first, then by
// session ID; participants in join order; events as they happened), with or without a
// filter, even when participants change between pages; a token is a position the service
// issued or a ValidationException; one page of thousands reads a page from the store.
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
import TestSupport
import XCTest

final class SessionListPagingTests: XCTestCase {
    static let account = ListPagingTests.account
    static let stageArn = "\(account):stage/LiveStage0001"
    static let sessionId = "st-Session000001"

    func makeApp(store: any CompositionStore) async throws -> some ApplicationProtocol {
        let configuration = ServerConfiguration(
            stages: [.init(id: "twoPeople", source: CompositionManagerTests.fixtures.appendingPathComponent("two-people").path)],
            buckets: ["rec-bucket": .directory(FileManager.default.temporaryDirectory.appendingPathComponent("rec-\(UUID())").path)])
        return try await buildApplication(configuration: configuration, dependencies: ServerDependencies(
            logger: Logger(label: "test"), events: InMemoryEventSink(), launcher: FakePipelineLauncher(), inMemoryStore: true),
            store: store)
    }

    /// A migrated store on a fresh database of the test process's PostgreSQL server.
    static func withPostgresStore(_ body: (PostgresCompositionStore) async throws -> Void) async throws {
        let url = try PostgresDatabaseURL.parse(try PostgresTestServer.shared().database()).get()
        var logger = Logger(label: "postgres")
        logger.logLevel = .warning
        let client = PostgresClient(configuration: url.clientConfiguration(), backgroundLogger: logger)
        let pool = Task { await client.run() }
        defer { pool.cancel() }
        let store = PostgresCompositionStore(client: client, logger: logger)
        try await store.migrate()
        try await body(store)
    }

    /// A day ago plus `seconds`: recent enough that the daemon's retention keeps the sessions.
    static func t(_ seconds: Int64) -> APITimestamp { APITimestamp(secondsSince1970: dayAgo + seconds) }
    static let dayAgo = Int64(Date().timeIntervalSince1970) - 86_400

    /// A session ID (`st-` and 13 letters or digits) for `index`.
    static func sessionId(_ index: Int) -> String { String(format: "st-%@%012d", index.isMultiple(of: 2) ? "A" : "z", index) }

    /// Participant `index`: IDs do not sort in join order; state, published and user ID vary.
    static func participant(_ index: Int, state: ParticipantState? = nil) -> StoredParticipant {
        let states: [ParticipantState] = [.connected, .disconnected, .connected]
        let recording: [ParticipantRecordingState] = [.active, .stopped, .disabled, .failed]
        return StoredParticipant(stageArn: stageArn, sessionId: sessionId, participant: Participant(
            participantId: String(format: "%@%05d", index.isMultiple(of: 3) ? "z" : "A", 99_999 - index),
            userId: "user-\(index % 4)", state: state ?? states[index % 3], firstJoinTime: t(1_000 + Int64(index)),
            attributes: [:], published: index % 5 < 2, recordingState: recording[index % 4], protocol: .whip))
    }

    static func event(_ index: Int, of participantId: String) -> ParticipantEvent {
        ParticipantEvent(name: EventName.allCases[index % EventName.allCases.count], participantId: participantId,
                         eventTime: t(2_000 + Int64(index)))
    }

    /// Fills `store`: sessions sharing start times (so the session ID breaks ties), participants
    /// and one participant's events interleaved with another's. Returns what the API should list.
    static func fill(_ store: some CompositionStore, sessions: Int, participants: Int, events: Int) async throws
        -> (sessionIds: [String], participants: [StoredParticipant], eventTimes: [Int64]) {
        var generator = SeededGenerator(seed: 38)
        var stored: [StoredStageSession] = []
        for index in (0..<sessions).shuffled(using: &generator) {
            let session = StoredStageSession(stageArn: stageArn, session: StageSession(
                sessionId: sessionId(index), startTime: t(500 + Int64(index / 3)), endTime: t(600 + Int64(index))))
            try await store.putStageSession(session)
            stored.append(session)
        }
        // Another stage's session is never listed.
        try await store.putStageSession(StoredStageSession(stageArn: "\(account):stage/OtherStage001",
                                                           session: StageSession(sessionId: sessionId(1), startTime: t(9_999))))
        let sessionIds = stored.sorted {
            ($0.session.startTime!.secondsSince1970, $1.session.sessionId!) > ($1.session.startTime!.secondsSince1970, $0.session.sessionId!)
        }.map { $0.session.sessionId! }
        var people: [StoredParticipant] = []
        for index in 0..<participants {
            let participant = Self.participant(index)
            try await store.putParticipant(participant)
            people.append(participant)
        }
        let listed = people.first?.participant.participantId ?? "p", other = people.last?.participant.participantId ?? "q"
        var eventTimes: [Int64] = []
        for index in 0..<events {
            let event = Self.event(index, of: index % 3 == 1 ? other : listed)
            try await store.appendParticipantEvent(stageArn: stageArn, sessionId: sessionId, event)
            if index % 3 != 1 || other == listed { eventTimes.append(event.eventTime!.secondsSince1970) }
        }
        return (sessionIds, people, eventTimes)
    }

    static func json(_ buffer: ByteBuffer) throws -> [String: Any] { try ListPagingTests.json(buffer) }

    /// One call of `operation`: its status, error type, items (under `itemsKey`) and nextToken.
    static func call(_ client: some TestClientProtocol, _ operation: String, _ body: [String: any Sendable], itemsKey: String)
        async throws -> (status: HTTPResponse.Status, errorType: String?, items: [[String: Any]], nextToken: String?) {
        let data = try JSONSerialization.data(withJSONObject: body)
        return try await client.execute(uri: "/\(operation)", method: .post, body: ByteBuffer(bytes: data)) { response in
            let errorType = response.headers[HTTPField.Name("x-amzn-ErrorType")!]
            guard response.status == .ok else { return (response.status, errorType, [], nil) }
            let json = try Self.json(response.body)
            return (response.status, errorType, try XCTUnwrap(json[itemsKey] as? [[String: Any]]), json["nextToken"] as? String)
        }
    }

    /// Every page at `maxResults`, following nextToken to the end; `between` runs after each page.
    static func listAll(_ client: some TestClientProtocol, _ operation: String, _ body: [String: any Sendable], itemsKey: String,
                        maxResults: Int?, between: (Int) async throws -> Void = { _ in }) async throws -> [[String: Any]] {
        var items: [[String: Any]] = [], token: String?, pages = 0
        repeat {
            var request = body
            if let maxResults { request["maxResults"] = maxResults }
            if let token { request["nextToken"] = token }
            let page = try await call(client, operation, request, itemsKey: itemsKey)
            XCTAssertEqual(page.status, .ok, "\(operation) page \(pages)")
            XCTAssertLessThanOrEqual(page.items.count, maxResults ?? 50)
            if page.nextToken != nil { XCTAssertEqual(page.items.count, maxResults ?? 50, "\(operation): a short page before the end") }
            items += page.items
            token = page.nextToken
            pages += 1
            try await between(pages)
        } while token != nil && pages < 10_000
        return items
    }

    func pagesThroughEverythingOnceInOrder(_ store: some CompositionStore) async throws {
        let expected = try await Self.fill(store, sessions: 37, participants: 41, events: 45)
        let session: [String: any Sendable] = ["stageArn": Self.stageArn, "sessionId": Self.sessionId]
        let filters: [(name: String, value: any Sendable, keep: @Sendable (Participant) -> Bool)] = [
            ("filterByUserId", "user-2", { $0.userId == "user-2" }),
            ("filterByPublished", true, { $0.published == true }),
            ("filterByPublished", false, { $0.published == false }),
            ("filterByState", "DISCONNECTED", { $0.state == .disconnected }),
            ("filterByRecordingState", "STOPPED", { $0.recordingState == .stopped }),
            ("filterByRecordingState", "STARTING", { $0.recordingState == .starting }),
        ]
        let listedId = expected.participants[0].participant.participantId!
        try await makeApp(store: store).test(.router) { client in
            for maxResults in [1, 2, 7, 37, 41, 100, nil] {
                let what = "maxResults \(maxResults.map(String.init) ?? "default")"
                let sessions = try await Self.listAll(client, "ListStageSessions", ["stageArn": Self.stageArn], itemsKey: "stageSessions",
                                                      maxResults: maxResults)
                XCTAssertEqual(sessions.compactMap { $0["sessionId"] as? String }, expected.sessionIds, what)
                let people = try await Self.listAll(client, "ListParticipants", session, itemsKey: "participants", maxResults: maxResults)
                XCTAssertEqual(people.compactMap { $0["participantId"] as? String },
                               expected.participants.map { $0.participant.participantId! }, what)
                for filter in filters {
                    var body = session
                    body[filter.name] = filter.value
                    let matching = try await Self.listAll(client, "ListParticipants", body, itemsKey: "participants", maxResults: maxResults)
                    XCTAssertEqual(matching.compactMap { $0["participantId"] as? String },
                                   expected.participants.filter { filter.keep($0.participant) }.map { $0.participant.participantId! },
                                   "\(what) \(filter.name) \(filter.value)")
                }
                var body = session
                body["participantId"] = listedId
                let events = try await Self.listAll(client, "ListParticipantEvents", body, itemsKey: "events", maxResults: maxResults)
                XCTAssertEqual(events.compactMap { ($0["eventTime"] as? String).flatMap(APITimestamp.init(iso8601:))?.secondsSince1970 },
                               expected.eventTimes, what)
            }

            // Participants who disconnect, join or leave the filter between pages: each
            // participant still in the filter from the start is listed exactly once.
            let connected = expected.participants.filter { $0.participant.state == .connected }
            var body = session
            body["filterByState"] = "CONNECTED"
            let listed = try await Self.listAll(client, "ListParticipants", body, itemsKey: "participants", maxResults: 3) { page in
                guard page == 1 else { return }
                for gone in connected.prefix(3) {
                    var left = gone
                    left.participant.state = .disconnected
                    try await store.putParticipant(left)
                }
                try await store.putParticipant(Self.participant(10_000, state: .connected))
            }
            XCTAssertEqual(listed.compactMap { $0["participantId"] as? String },
                           (connected.map(\.participant) + [Self.participant(10_000).participant]).map { $0.participantId! })
        }
    }

    func testPagesThroughEverythingOnceInOrderInMemory() async throws {
        try await pagesThroughEverythingOnceInOrder(InMemoryCompositionStore())
    }

    func testPagesThroughEverythingOnceInOrderInSQLite() async throws {
        try await pagesThroughEverythingOnceInOrder(try SQLiteCompositionStore())
    }

    func testPagesThroughEverythingOnceInOrderOnPostgreSQL() async throws {
        try await Self.withPostgresStore { store in try await pagesThroughEverythingOnceInOrder(store) }
    }

    func hostileTokens(_ store: some CompositionStore) async throws {
        let expected = try await Self.fill(store, sessions: 5, participants: 5, events: 5)
        let operations: [(name: String, body: [String: any Sendable], itemsKey: String)] = [
            ("ListStageSessions", ["stageArn": Self.stageArn], "stageSessions"),
            ("ListParticipants", ["stageArn": Self.stageArn, "sessionId": Self.sessionId], "participants"),
            ("ListParticipants", ["stageArn": Self.stageArn, "sessionId": Self.sessionId, "filterByUserId": "user-1"], "participants"),
            ("ListParticipantEvents", ["stageArn": Self.stageArn, "sessionId": Self.sessionId,
                                       "participantId": expected.participants[0].participant.participantId!], "events"),
        ]
        try await makeApp(store: store).test(.router) { client in
            func list(_ operation: (name: String, body: [String: any Sendable], itemsKey: String), _ token: String)
                async throws -> (HTTPResponse.Status, String?) {
                var body = operation.body
                body["nextToken"] = token
                body["maxResults"] = 2
                let answer = try await Self.call(client, operation.name, body, itemsKey: operation.itemsKey)
                return (answer.status, answer.errorType)
            }
            let sequenceKeys = ["", "x", "-1", "+0000000000000000001", "1", "9223372036854775808", "99999999999999999999",
                                "00000000000000000001x", "0000000000000000000\u{661}"]
            for operation in operations {
                let malformed = ["bm9wZQ==", "!!!", "djE", String(repeating: "A", count: 1_024), String(repeating: "/", count: 1_025),
                                 Pagination.encodeToken(lastKey: "a\u{0}")]
                    + (operation.name == "ListStageSessions"
                        ? ["", "1", "0000000000000000000x", "1844674407370955161\u{661}st-A", String(repeating: "9", count: 21)]
                        : sequenceKeys).map { Pagination.encodeToken(lastKey: $0) }
                for token in malformed {
                    let (status, type) = try await list(operation, token)
                    XCTAssertEqual(status, .badRequest, "\(operation.name) \(token.prefix(40))")
                    XCTAssertEqual(type, "ValidationException", "\(operation.name) \(token.prefix(40))")
                }
                // Positions never issued but well formed: a page after them, or none.
                let positions = operation.name == "ListStageSessions"
                    ? ["00000000000000000000", "18446744073709551615", "09223372036854775807\u{1}", "09223372036854775807\u{10FFFF}",
                       "09223372036854775807" + String(repeating: "\u{FF}", count: 300)]
                    : ["00000000000000000000", "09223372036854775807", "00000000000000000003"]
                for key in positions {
                    let (status, _) = try await list(operation, Pagination.encodeToken(lastKey: key))
                    XCTAssertEqual(status, .ok, "\(operation.name) \(key.debugDescription.prefix(40))")
                }
            }
            // Random tokens within the model's pattern: an answer, never a server error.
            var generator = SeededGenerator(seed: 7)
            for token in PageTokens.random(count: 200, seed: 7) {
                let (status, _) = try await list(operations.randomElement(using: &generator)!, token)
                XCTAssertTrue(status == .ok || status == .badRequest, "\(token): \(status)")
            }
        }
    }

    func testAHostileNextTokenIsAValidationError() async throws {
        try await hostileTokens(InMemoryCompositionStore())
    }

    func testAHostileNextTokenIsAValidationErrorOnPostgreSQL() async throws {
        try await Self.withPostgresStore { store in try await hostileTokens(store) }
    }

    /// The store counts what it hands out: with thousands of sessions, participants and events,
    /// a page (and the next) of each reads a few rows, never the whole list.
    func testAPageReadsAPageFromTheStoreNotTheList() async throws {
        let base = try SQLiteCompositionStore()
        let expected = try await Self.fill(base, sessions: 3_000, participants: 5_000, events: 30_000)
        XCTAssertEqual(expected.eventTimes.count, 20_000)
        let store = CountingStore(base)
        let session: [String: any Sendable] = ["stageArn": Self.stageArn, "sessionId": Self.sessionId]
        var events = session
        events["participantId"] = expected.participants[0].participant.participantId!
        var filtered = session
        filtered["filterByState"] = "CONNECTED"
        let operations: [(name: String, body: [String: any Sendable], itemsKey: String)] = [
            ("ListStageSessions", ["stageArn": Self.stageArn], "stageSessions"),
            ("ListParticipants", session, "participants"),
            ("ListParticipants", filtered, "participants"),
            ("ListParticipantEvents", events, "events"),
        ]
        try await makeApp(store: store).test(.router) { client in
            for operation in operations {
                store.reset()
                var body = operation.body
                body["maxResults"] = 1
                let first = try await Self.call(client, operation.name, body, itemsKey: operation.itemsKey)
                XCTAssertEqual(first.status, .ok, operation.name)
                XCTAssertEqual(first.items.count, 1, operation.name)
                XCTAssertNotNil(first.nextToken, operation.name)
                var read = store.read
                XCTAssertEqual(read.wholeLists, [], operation.name)
                XCTAssertLessThanOrEqual(read.rows, 3, operation.name)
                // The next page costs the same.
                store.reset()
                body["nextToken"] = first.nextToken
                let second = try await Self.call(client, operation.name, body, itemsKey: operation.itemsKey)
                XCTAssertEqual(second.status, .ok, operation.name)
                XCTAssertEqual(second.items.count, 1, operation.name)
                read = store.read
                XCTAssertEqual(read.wholeLists, [], operation.name)
                XCTAssertLessThanOrEqual(read.rows, 3, operation.name)
            }
            // Paging through all 20,000 events reads each once (it read 4,000,000 rows when
            // every page read the whole list).
            store.reset()
            let all = try await Self.listAll(client, "ListParticipantEvents", operations[3].body, itemsKey: "events", maxResults: 100)
            XCTAssertEqual(all.count, 20_000)
            XCTAssertEqual(store.read.rows, 20_000)
        }
    }
}
