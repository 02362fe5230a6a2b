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

    /// A fresh database's URL on the shared server.
    static func freshURL() throws -> PostgresDatabaseURL {
        let text = try PostgresTestServer.shared().database()
        return try PostgresDatabaseURL.parse(text).get()
    }

    /// Runs `body` with a migrated store on a fresh database.
    static func with<Result: Sendable>(_ body: (PostgresCompositionStore) async throws -> Result) async throws -> Result {
        try await PostgresCompositionStore.withStore(url: try freshURL(), logger: logger, body)
    }
}
