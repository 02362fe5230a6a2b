// `database.url` in the configuration: postgres://user:password@host:port/database?sslmode=…,
// the libpq form users already have. A Unix socket directory is `?host=/run/postgresql`.
import Foundation
import Logging
public import Persistence
public import PostgresNIO

public struct PostgresDatabaseURL: Sendable, Equatable, CustomStringConvertible {
    public enum TLSMode: String, Sendable, Equatable {
        /// No TLS (loopback, a Unix socket, or a private network).
        case disable
        /// TLS when the server offers it (libpq's default).
        case prefer
        /// TLS, or no connection.
        case require
    }

    public var host: String
    public var port: Int
    /// Set when `?host=` names a socket directory: connects to `<dir>/.s.PGSQL.<port>`.
    public var socketDirectory: String?
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode

    /// Parses `text`; a message naming what is wrong otherwise.
    public static func parse(_ text: String) -> Result<PostgresDatabaseURL, PersistenceError> {
        guard let components = URLComponents(string: text), let scheme = components.scheme,
              scheme == "postgres" || scheme == "postgresql" else {
            return .failure(PersistenceError("database.url: expected postgres://user@host:port/database, not \(redacted(text))"))
        }
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] { query[item.name] = item.value ?? "" }
        var socketDirectory: String?
        if let host = query["host"], host.hasPrefix("/") { socketDirectory = host }
        let host = components.host.flatMap { $0.isEmpty ? nil : $0 } ?? "localhost"
        guard socketDirectory != nil || components.host.map({ !$0.isEmpty }) == true else {
            return .failure(PersistenceError("database.url: no host (postgres://user@host/database, or ?host=/socket/directory)"))
        }
        let port = components.port ?? 5432
        guard (1...65_535).contains(port) else { return .failure(PersistenceError("database.url: port \(port) is out of range")) }
        guard let user = components.user.flatMap({ $0.removingPercentEncoding }), !user.isEmpty else {
            return .failure(PersistenceError("database.url: no user name (postgres://user@host/database)"))
        }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else {
            return .failure(PersistenceError("database.url: no database name (postgres://user@host/database)"))
        }
        let mode: TLSMode
        switch query["sslmode"] ?? "prefer" {
        case "disable": mode = .disable
        case "allow", "prefer": mode = .prefer
        case "require", "verify-ca", "verify-full": mode = .require
        case let other: return .failure(PersistenceError("database.url: sslmode \(other) is not one of disable, prefer, require, verify-full"))
        }
        return .success(PostgresDatabaseURL(host: host, port: port, socketDirectory: socketDirectory, username: user,
                                            password: components.password.flatMap { $0.removingPercentEncoding },
                                            database: database.removingPercentEncoding ?? database, tls: mode))
    }

    /// The URL without its password, for logs and `config check`.
    public var description: String {
        "postgres://\(username)@\(socketDirectory ?? "\(host):\(port)")/\(database)"
    }

    static func redacted(_ text: String) -> String {
        guard var components = URLComponents(string: text), components.password != nil else { return text }
        components.password = "***"
        return components.string ?? text
    }

    /// The client configuration for postgres-nio. `verify-full` checks the server's
    /// certificate against the system's trust roots and the host name.
    public func clientConfiguration() -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        if let socketDirectory {
            configuration = PostgresClient.Configuration(unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: username,
                                                         password: password, database: database)
        } else {
            let tls: PostgresClient.Configuration.TLS
            switch self.tls {
            case .disable: tls = .disable
            case .prefer: tls = .prefer(.makeClientConfiguration())
            case .require: tls = .require(.makeClientConfiguration())
            }
            configuration = PostgresClient.Configuration(host: host, port: port, username: username, password: password,
                                                         database: database, tls: tls)
        }
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }

    /// The same, for one connection made directly (`probe`).
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        if let socketDirectory {
            configuration = PostgresConnection.Configuration(unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: username,
                                                             password: password, database: database)
        } else {
            let tls: PostgresConnection.Configuration.TLS
            switch self.tls {
            case .disable: tls = .disable
            case .prefer: tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
            configuration = PostgresConnection.Configuration(host: host, port: port, username: username, password: password,
                                                             database: database, tls: tls)
        }
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }
}

extension PostgresCompositionStore {
    /// One connection made directly, before the pool is used: a server that refuses (no
    /// socket, a role or password it does not take, no such database) is reported in its own
    /// words at once, not as a first call that got no answer within the call timeout (the pool
    /// keeps retrying and only logs why).
    public static func probe(_ url: PostgresDatabaseURL, logger: Logger) async throws(PersistenceError) {
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 0, logger: logger)
        } catch {
            throw PersistenceError("cannot use the PostgreSQL database \(url): \(Self.refusal(error))")
        }
        try? await connection.close()
    }

    /// Why a connection was refused, with what to check.
    static func refusal(_ error: any Error) -> String {
        let said = describe(error)
        guard let error = error as? PSQLError else { return said }
        switch error.serverInfo?[.sqlState] {
        case "28P01": return "\(said); check the password in database.url"
        case "28000": return "\(said); check the user in database.url (and pg_hba.conf)"
        case "3D000": return "\(said); create the database or fix its name in database.url"
        case .some: return said
        case nil: return "\(said); is PostgreSQL running and listening there?"
        }
    }

    /// Runs `body` with a migrated store on `url`; the connection pool runs as a child task
    /// for as long as `body` does.
    public static func withStore<Result: Sendable>(url: PostgresDatabaseURL, callTimeout: Duration = .seconds(10), logger: Logger,
                                                   _ body: (PostgresCompositionStore) async throws -> Result) async throws -> Result {
        let client = PostgresClient(configuration: url.clientConfiguration(), backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            let store = PostgresCompositionStore(client: client, callTimeout: callTimeout, logger: logger)
            try await probe(url, logger: logger)
            try await store.migrate()
            return try await body(store)
        }
    }
}
