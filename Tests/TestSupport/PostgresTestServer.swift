// A real PostgreSQL server for the tests, started once per test process: Debian's `postgresql`
// binaries, initdb in a temporary directory, a free port on 127.0.0.1, trust authentication,
// fsync off. Each test gets a database of its own (`database()`). The server is stopped and
// its directory removed when the process exits. Root cannot run PostgreSQL: as root the
// server runs as the `postgres` user the package creates.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

public final class PostgresTestServer: @unchecked Sendable {
    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String
    }

    public let port: Int
    let directory: String
    let binaries: String
    private let lock = NSLock()
    private var databases = 0

    nonisolated(unsafe) private static var started: Result<PostgresTestServer, Unavailable>?
    private static let startLock = NSLock()

    /// The process's server, started on first use.
    public static func shared() throws -> PostgresTestServer {
        startLock.lock()
        defer { startLock.unlock() }
        if let started { return try started.get() }
        let result: Result<PostgresTestServer, Unavailable>
        do { result = .success(try PostgresTestServer()) } catch let error as Unavailable {
            result = .failure(error)
        } catch {
            result = .failure(Unavailable(description: "\(error)"))
        }
        started = result
        if case .success(let server) = result {
            stopAtExit = server
            atexit { PostgresTestServer.stopAtExit?.stop() }
        }
        return try result.get()
    }

    nonisolated(unsafe) private static var stopAtExit: PostgresTestServer?

    /// A server of the caller's own (a test that restarts it must not disturb the others);
    /// the caller stops it.
    public static func dedicated() throws -> PostgresTestServer { try PostgresTestServer() }

    /// Where Debian puts the server binaries (`/usr/lib/postgresql/<version>/bin`), newest first.
    static func findBinaries() throws(Unavailable) -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap { Int($0) }.sorted(by: >)
        for version in versions where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") {
            return "\(root)/\(version)/bin"
        }
        throw Unavailable(description: "PostgreSQL server binaries not found under \(root): `make test` installs Debian's postgresql")
    }

    private init() throws {
        binaries = try Self.findBinaries()
        // Under /tmp, not $TMPDIR: the server's socket lives in this directory, and a socket path
        // longer than 107 bytes is refused; run as `postgres`, the server must also be able to reach
        // it, which a private $TMPDIR (under root's home, say) does not allow.
        let base = FileManager.default.isWritableFile(atPath: "/tmp") ? "/tmp/" : NSTemporaryDirectory()
        directory = base + "stage-compositor-pg-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if getuid() == 0 {
            guard let user = getpwnam("postgres") else {
                throw Unavailable(description: "running as root, and there is no `postgres` user to run the server as")
            }
            guard chown(directory, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
                throw Unavailable(description: "chown \(directory): \(errno)")
            }
        }
        let data = directory + "/data"
        try Self.serverTool("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"],
                            binaries: binaries, directory: directory)
        // A port nobody listens on now; pg_ctl fails clearly if another process takes it meanwhile.
        port = try Self.freePort()
        let options = "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off"
            + " -c full_page_writes=off -c max_connections=200"
        try Self.serverTool("pg_ctl", ["start", "-w", "-t", "60", "-D", data, "-l", directory + "/server.log", "-o", options],
                            binaries: binaries, directory: directory)
    }

    /// Runs one of the server's tools, as `postgres` when we are root.
    private func serverTool(_ name: String, _ arguments: [String]) throws {
        try Self.serverTool(name, arguments, binaries: binaries, directory: directory)
    }

    private static func serverTool(_ name: String, _ arguments: [String], binaries: String, directory: String) throws {
        let path = "\(binaries)/\(name)"
        let (status, output) = getuid() == 0
            ? try spawn("/usr/sbin/runuser", ["-u", "postgres", "--", path] + arguments, directory: directory)
            : try spawn(path, arguments, directory: directory)
        guard status == 0 else {
            let log = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
            throw Unavailable(description: "\(name) failed (\(status)): \(output)\n\(log.suffix(2000))")
        }
    }

    /// Runs a program to its end with its output in a file: pg_ctl leaves the server running
    /// after it exits, and Foundation's Process was seen never to return from waitUntilExit
    /// for it (its exit went unnoticed), so this waits on the pid itself.
    static func spawn(_ path: String, _ arguments: [String], directory: String) throws -> (Int32, String) {
        let outputPath = directory + "/tool-\(UInt32.random(in: 0...UInt32.max)).out"
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard result == 0 else { throw Unavailable(description: "cannot start \(path): \(String(cString: strerror(result)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw Unavailable(description: "waitpid \(path): \(errno)") }
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // WIFEXITED / WEXITSTATUS, which Swift does not import.
        return ((status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f), output)
    }

    public static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Unavailable(description: "socket: \(errno)") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(socket, generic, length) == 0 && getsockname(socket, generic, &length) == 0
            }
        }
        guard bound else { throw Unavailable(description: "bind: \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A new, empty database; its URL (TCP on 127.0.0.1, no TLS).
    public func database() throws -> String {
        let name = lock.withLock { () -> String in
            databases += 1
            return "test_\(databases)"
        }
        let (status, output) = try Self.spawn("\(binaries)/createdb", ["-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", name],
                                              directory: directory)
        guard status == 0 else { throw Unavailable(description: "createdb \(name): \(output)") }
        return url(database: name)
    }

    /// What `psql -tA` prints for `sql` in the database at `url` (one of `database()`'s).
    public func query(url: String, _ sql: String) throws -> String {
        let name = String(url.split(separator: "/").last?.split(separator: "?").first ?? "")
        let (status, output) = try Self.spawn("\(binaries)/psql", ["-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", name,
                                                                  "-tA", "-c", sql], directory: directory)
        guard status == 0 else { throw Unavailable(description: "psql: \(output)") }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    public func url(database: String) -> String {
        "postgres://postgres@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    /// Stops the server (fast shutdown: clients are disconnected) and removes its directory.
    public func stop() {
        try? serverTool("pg_ctl", ["stop", "-m", "fast", "-w", "-D", directory + "/data"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `pg_ctl restart`: every connection is dropped and the server comes back on the same port.
    public func restart() throws {
        try serverTool("pg_ctl", restartArguments)
    }

    /// The command line `restart()` runs (as `postgres` when we are root), for a daemon-process
    /// test whose script restarts the server itself at a moment of its choosing. Run it with its
    /// output in a file, not a pipe: the server it starts keeps its output open.
    public var restartCommand: [String] {
        let tool = ["\(binaries)/pg_ctl"] + restartArguments
        return getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--"] + tool : tool
    }

    private var restartArguments: [String] { ["restart", "-m", "fast", "-w", "-t", "60", "-D", directory + "/data"] }
}
