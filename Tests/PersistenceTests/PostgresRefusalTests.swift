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
        do {
            // Without the direct first connection, the first call would end after the call
            // timeout with "no answer within 60 s" and no reason. (No wall-time bound here: in the
            // whole suite on two cores a call waits up to 100 s for a thread.)
            try await PostgresCompositionStore.withStore(url: url, callTimeout: .seconds(60), logger: Logger(label: "refusal")) { _ in }
        } catch let error as PersistenceError {
            #expect(!error.message.contains("no answer within"), "\(error.message)")
            return error.message
        }
        Issue.record("\(text) was accepted")
        return ""
    }

    @Test("a role, a database or a port the server does not have: each refused with its reason and what to check")
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
