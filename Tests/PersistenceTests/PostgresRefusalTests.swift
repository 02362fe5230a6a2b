// A PostgreSQL that refuses is reported at start in its own words, with what to check (#41),
// not as a first call that got no answer within the call timeout.
import Foundation
import Logging
import Persistence
import PostgresStore
import TestSupport
import Testing

@Suite struct PostgresRefusalTests {
    static func refusal(_ text: String) async throws -> String {
        let url = try PostgresDatabaseURL.parse(text).get()
        let started = ContinuousClock.now
        do {
            try await PostgresCompositionStore.withStore(url: url, callTimeout: .seconds(60), logger: Logger(label: "refusal")) { _ in }
        } catch let error as PersistenceError {
            // Refused at once, not after the call timeout.
            #expect(ContinuousClock.now - started < .seconds(30), "\(error.message)")
            return error.message
        }
        Issue.record("\(text) was accepted")
        return ""
    }

    @Test("a role, a database or a port the server does not have: each refused at once, with what to check")
    func refusalsSayWhy() async throws {
        let good = try PostgresTestServer.shared().database()
        let port = try #require(URLComponents(string: good)?.port)
        let role = try await Self.refusal("postgres://nobody@127.0.0.1:\(port)/postgres?sslmode=disable")
        #expect(role.contains("role \"nobody\" does not exist") && role.contains("check the user in database.url"), "\(role)")
        let database = try await Self.refusal("postgres://postgres@127.0.0.1:\(port)/no_such_database?sslmode=disable")
        #expect(database.contains("no_such_database") && database.contains("3D000") && database.contains("create the database"),
                "\(database)")
        // A port nothing listens on (bound and closed here, so it is free).
        let closed = try PostgresTestServer.freePort()
        let nothing = try await Self.refusal("postgres://postgres@127.0.0.1:\(closed)/postgres?sslmode=disable")
        #expect(nothing.contains("postgres://postgres@127.0.0.1:\(closed)/postgres") && nothing.contains("is PostgreSQL running"),
                "\(nothing)")
    }
}
