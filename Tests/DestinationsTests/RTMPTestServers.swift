// Real receivers for the channel destination tests, all on loopback: nginx with the RTMP
// module (records what it receives), an `on_publish` hook that rejects one stream key, and
// a TCP proxy that forwards to nginx until told to stop reading.

import Foundation
import Synchronization
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The repository root, from this file's path.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A free loopback TCP port (bound then released; the tests run serialized).
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw SocketError("socket") }
    defer { close(fd) }
    var address = loopbackAddress(port: 0)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw SocketError("bind") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

struct SocketError: Error, CustomStringConvertible {
    var description: String
    init(_ call: String) { description = "\(call): \(String(cString: strerror(errno)))" }
}

func loopbackAddress(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
}

/// A listening socket on 127.0.0.1:`port`; `receiveBuffer` shrinks the accepted sockets'
/// receive window (set before listen so it applies to them).
func listenOnLoopback(port: Int, receiveBuffer: Int32? = nil) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw SocketError("socket") }
    var yes: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
    var address = loopbackAddress(port: port)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0, listen(fd, 16) == 0 else {
        close(fd)
        throw SocketError("bind/listen 127.0.0.1:\(port)")
    }
    return fd
}

func connectToLoopback(port: Int) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    var address = loopbackAddress(port: port)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    if connected != 0 {
        close(fd)
        return nil
    }
    return fd
}

/// Waits until something accepts connections on `port` (or `timeout` passes).
func waitForListener(port: Int, timeout: TimeInterval = 5) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if let fd = connectToLoopback(port: port) {
            close(fd)
            return true
        }
        usleep(20_000)
    }
    return false
}

/// Starts `path` with an empty signal mask. Foundation's Process passes on the test
/// thread's mask, in which SIGTERM is blocked, and nginx would then never stop.
func spawnWithSignalsUnblocked(_ path: String, _ arguments: [String]) throws -> pid_t {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    sigaddset(&defaults, SIGTERM)
    sigaddset(&defaults, SIGPIPE)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let status = posix_spawn(&pid, path, nil, &attributes, argv, environ)
    guard status == 0 else { throw SocketError("posix_spawn \(path): \(status)") }
    return pid
}

/// nginx + libnginx-mod-rtmp in a temporary prefix: no daemon, no master process, logs and
/// pid in the temp directory. Application `live` records every stream to `record/<key>.flv`.
final class NginxRTMPServer: @unchecked Sendable {
    let port: Int
    let directory: URL
    private let configuration: URL
    private var pid: pid_t?
    /// With `tlsFront`: RTMPS on this port, terminated by nginx's stream module and passed to
    /// the RTMP port, as a TLS load balancer in front of an ingest server would.
    let tlsPort: Int?
    /// The front's self-signed certificate (PEM; also its own CA), valid for 127.0.0.1.
    var certificate: String { directory.appendingPathComponent("tls/certificate.pem").path }

    /// `publishHookPort`: nginx asks http://127.0.0.1:<port>/publish before accepting a publish.
    init(publishHookPort: Int? = nil, tlsFront: Bool = false) throws {
        port = try freeLoopbackPort()
        tlsPort = tlsFront ? try freeLoopbackPort() : nil
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("nginx-rtmp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("record"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("logs"), withIntermediateDirectories: true)
        configuration = directory.appendingPathComponent("nginx.conf")
        let hook = publishHookPort.map { "on_publish http://127.0.0.1:\($0)/publish;" } ?? ""
        var front = ""
        if let tlsPort {
            let tls = directory.appendingPathComponent("tls")
            try FileManager.default.createDirectory(at: tls, withIntermediateDirectories: true)
            let generated = try runTool("openssl", [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                "-keyout", tls.appendingPathComponent("key.pem").path, "-out", certificate], keeping: .both)
            guard generated.status == 0 else { throw SocketError("openssl req: \(generated.text)") }
            front = """
            load_module /usr/lib/nginx/modules/ngx_stream_module.so;
            stream {
                server {
                    listen 127.0.0.1:\(tlsPort) ssl;
                    ssl_certificate \(certificate);
                    ssl_certificate_key \(tls.appendingPathComponent("key.pem").path);
                    proxy_pass 127.0.0.1:\(port);
                }
            }
            """
        }
        let text = """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(directory.path)/nginx.pid;
        error_log \(directory.path)/logs/error.log info;
        load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
        \(front)
        events { worker_connections 64; }
        rtmp {
            server {
                listen 127.0.0.1:\(port);
                application live {
                    live on;
                    record all;
                    record_path \(directory.path)/record;
                    record_unique off;
                    \(hook)
                }
            }
        }

        """
        try text.write(to: configuration, atomically: true, encoding: .utf8)
        try start()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func start() throws {
        guard pid == nil else { return }
        pid = try spawnWithSignalsUnblocked("/usr/sbin/nginx", ["-c", configuration.path, "-p", directory.path,
                                                                "-e", directory.appendingPathComponent("logs/error.log").path])
        guard waitForListener(port: port), tlsPort.map({ waitForListener(port: $0) }) ?? true else {
            stop()
            throw SocketError("nginx did not listen on \(port); see \(directory.path)/logs/error.log")
        }
    }

    /// Fast shutdown (SIGTERM): connections are dropped, recordings closed.
    func stop() {
        guard let pid else { return }
        self.pid = nil
        kill(pid, SIGTERM)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }

    func recording(streamKey: String) -> URL { directory.appendingPathComponent("record/\(streamKey).flv") }

    var errorLog: String { (try? String(contentsOf: directory.appendingPathComponent("logs/error.log"), encoding: .utf8)) ?? "" }
}

/// Answers nginx-rtmp's `on_publish` POST: 403 for stream key `rejectedKey`, 200 otherwise.
final class PublishHookServer: @unchecked Sendable {
    let port: Int
    private let listener: Int32

    init(rejectedKey: String) throws {
        port = try freeLoopbackPort()
        listener = try listenOnLoopback(port: port)
        let listener = self.listener
        let body = "name=\(rejectedKey)&"
        Thread.detachNewThread {
            // Ends when deinit closes the listener.
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 { return }
                let request = PublishHookServer.readRequest(client)
                // The stream name is a form field; the key may carry "?priority=N" args separately.
                let status = (request + "&").contains(body) ? "403 Forbidden" : "200 OK"
                let response = "HTTP/1.1 \(status)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                _ = response.withCString { send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                close(client)
            }
        }
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private static func readRequest(_ fd: Int32) -> String {
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            data += buffer[0..<count]
            let text = String(decoding: data, as: UTF8.self)
            if let headerEnd = text.range(of: "\r\n\r\n") {
                let headers = text[..<headerEnd.lowerBound].lowercased()
                let length = headers.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                if text[headerEnd.upperBound...].utf8.count >= length { return text }
            }
        }
        return String(decoding: data, as: UTF8.self)
    }
}

/// A TCP proxy in front of `upstreamPort`. Forwards both ways until `stallReading()`; from
/// then on it stops reading from its clients (their sends back up and stall) and new
/// connections are accepted but never read. Small receive buffers so a stall shows quickly.
final class StallingProxy: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let stalled = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let openSockets = Mutex<[Int32]>([])

    init(upstreamPort: Int) throws {
        port = try freeLoopbackPort()
        listener = try listenOnLoopback(port: port, receiveBuffer: 4096)
        let listener = self.listener
        Thread.detachNewThread { [self] in
            while !stopped.load(ordering: .relaxed) {
                let client = accept(listener, nil, nil)
                if client < 0 { return }
                openSockets.withLock { $0.append(client) }
                if stalled.load(ordering: .relaxed) { continue }  // accepted, never read
                guard let upstream = connectToLoopback(port: upstreamPort) else {
                    close(client)
                    continue
                }
                openSockets.withLock { $0.append(upstream) }
                Thread.detachNewThread { [self] in pump(client: client, upstream: upstream) }
            }
        }
    }

    func stallReading() { stalled.store(true, ordering: .relaxed) }

    /// Closes everything (the proxy's threads hold it alive until then).
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in openSockets.withLock({ $0 }) {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
    }

    private func pump(client: Int32, upstream: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !stopped.load(ordering: .relaxed) {
            let readClient = !stalled.load(ordering: .relaxed)
            var fds = [pollfd(fd: client, events: readClient ? Int16(POLLIN) : 0, revents: 0),
                       pollfd(fd: upstream, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, 50)
            if ready < 0 { return }
            for (index, (from, to)) in [(client, upstream), (upstream, client)].enumerated()
            where fds[index].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                if from == client && stalled.load(ordering: .relaxed) { continue }
                let count = recv(from, &buffer, buffer.count, 0)
                if count <= 0 { return }
                var sent = 0
                while sent < count {
                    let written = buffer.withUnsafeBytes { send(to, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
                    if written <= 0 { return }
                    sent += written
                }
            }
        }
    }
}
