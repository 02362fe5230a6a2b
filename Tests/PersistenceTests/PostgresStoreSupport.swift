// Every store test runs against PostgreSQL too: a database of its own on the test process's
// server (TestSupport.PostgresTestServer), migrated by the store itself.
import Foundation
import Logging
import Persistence
import PostgresStore
import TestSupport

enum PostgresStores {
    static var logger: Logger {
        var logger = Logger(label: "postgres-store-test")
        logger.logLevel = .warning
        return logger
    }

    /// The tests check what the store does, not how fast: the whole suite runs its tests in
    /// parallel on two cores, where calls waited over 10 s for a thread (a fresh-clone run,
    /// 2026-11-26) and these suites took up to 95 s. The bound only stops a hang; the timeout
    /// test itself uses 2 s.
    static let callTimeout: Duration = .seconds(600)

    /// A fresh database's URL on the shared server.
    static func freshURL() throws -> PostgresDatabaseURL {
        let text = try PostgresTestServer.shared().database()
        return try PostgresDatabaseURL.parse(text).get()
    }

    /// Runs `body` with a migrated store on a fresh database.
    static func with<Result: Sendable>(_ body: (PostgresCompositionStore) async throws -> Result) async throws -> Result {
        try await PostgresCompositionStore.withStore(url: try freshURL(), callTimeout: callTimeout, logger: logger, body)
    }
}
