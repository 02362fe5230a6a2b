// What only the PostgreSQL store has: its URL, migrations shared by nodes starting at once,
// and a server restart under it. (The stores' common behaviour is in the other files, run
// against InMemory, SQLite and PostgreSQL alike.)
import APIModels
import Foundation
import Logging
import Persistence
import PostgresStore
import Testing
import TestSupport

@Suite struct PostgresDatabaseURLTests {
    @Test("database.url in its libpq forms", arguments: [
        ("postgres://fleet@db.internal/stages", "postgres://fleet@db.internal:5432/stages", PostgresDatabaseURL.TLSMode.prefer),
        ("postgresql://fleet:s%40cret@10.0.0.5:6432/stages?sslmode=require", "postgres://fleet@10.0.0.5:6432/stages", .require),
        ("postgres://fleet@localhost/stages?sslmode=disable", "postgres://fleet@localhost:5432/stages", .disable),
        ("postgres://fleet@/stages?host=/run/postgresql", "postgres://fleet@/run/postgresql/stages", .prefer),
        ("postgres://fleet@db/stages?sslmode=verify-full", "postgres://fleet@db:5432/stages", .require),
    ])
    func parses(text: String, shown: String, tls: PostgresDatabaseURL.TLSMode) throws {
        let url = try PostgresDatabaseURL.parse(text).get()
        #expect(url.description == shown)
        #expect(url.tls == tls)
    }

    @Test("the password is decoded and never shown")
    func password() throws {
        let url = try PostgresDatabaseURL.parse("postgres://fleet:s%40cret@db/stages").get()
        #expect(url.password == "s@cret")
        #expect(!url.description.contains("cret"))
        guard case .failure(let error) = PostgresDatabaseURL.parse("mysql://fleet:hunter2@db/stages") else {
            Issue.record("a mysql URL was accepted")
            return
        }
        #expect(!error.message.contains("hunter2"))
    }

    @Test("what is wrong with a URL is named", arguments: [
        ("sqlite:///var/lib/x.db", "expected postgres://"),
        ("postgres://db/stages", "no user name"),
        ("postgres://fleet@db/", "no database name"),
        ("postgres://fleet@db/a/b", "no database name"),
        ("postgres://fleet@/stages", "no host"),
        ("postgres://fleet@db:70000/stages", "port"),
        ("postgres://fleet@db/stages?sslmode=sometimes", "sslmode sometimes"),
    ])
    func refuses(text: String, reason: String) {
        guard case .failure(let error) = PostgresDatabaseURL.parse(text) else {
            Issue.record("\(text) was accepted")
            return
        }
        #expect(error.message.contains(reason), "\(error.message)")
    }
}

@Suite struct PostgresStoreTests {
    @Test("nodes starting together migrate one database once: every version applied, in order")
    func concurrentMigrations() async throws {
        let url = try PostgresStores.freshURL()
        let versions = try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<4 {
                group.addTask {
                    try await PostgresCompositionStore.withStore(url: url, callTimeout: PostgresStores.callTimeout, logger: PostgresStores.logger) { store in
                        try await store.appliedMigrations()
                    }
                }
            }
            var all: [[String]] = []
            for try await versions in group { all.append(versions) }
            return all
        }
        #expect(versions.count == 4)
        #expect(Set(versions.map { $0.joined(separator: ",") }).count == 1)
        #expect(versions.first?.isEmpty == false)
        #expect(versions.first == versions.first?.sorted())
    }

    @Test("a write after `pg_ctl restart` succeeds on a new connection, and what was committed before is there")
    func survivesARestart() async throws {
        let server = try PostgresTestServer.dedicated()
        defer { server.stop() }
        let url = try PostgresDatabaseURL.parse(try server.database()).get()
        let stage = StoredStage(stage: Stage(arn: "arn:aws:ivs:us-east-1:123456789012:stage/RRRRRRRRRRRR", name: "r", tags: [:]),
                                sourcePath: "")
        try await PostgresCompositionStore.withStore(url: url, callTimeout: PostgresStores.callTimeout, logger: PostgresStores.logger) { store in
            try await store.putStage(stage)
            try server.restart()
            // The pool's connection died with the server: the next call may fail once, and a
            // later one goes through on a new connection.
            var stored: [StoredStage] = []
            for attempt in 0..<20 {
                do {
                    stored = try await store.stages()
                    break
                } catch {
                    if attempt == 19 { throw error }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            #expect(stored == [stage])
            let removed = try await store.deleteStage(arn: stage.stage.arn)
            #expect(removed)
        }
    }

    @Test("a server that is not there is a clear error at once, not a hang")
    func unreachable() async throws {
        let port = try PostgresTestServer.freePort()
        let url = try PostgresDatabaseURL.parse("postgres://nobody@127.0.0.1:\(port)/none?sslmode=disable").get()
        // The store's first connection is made directly (PostgresCompositionStore.probe): the
        // refusal is said in its own words. (Before, the 2 s call timeout ended the first call
        // with "no answer within 2 s"; without it postgres-nio's pool retried for over a minute.)
        do {
            try await PostgresCompositionStore.withStore(url: url, callTimeout: .seconds(2), logger: PostgresStores.logger) { _ in }
            Issue.record("an unreachable server was used")
        } catch let error as PersistenceError {
            #expect(error.message.contains("Connection refused") && error.message.contains("is PostgreSQL running"),
                    "\(error.message)")
        }
    }
}
