// systemd's notification protocol (sd_notify(3)) without libsystemd: newline-separated
// assignments in one datagram to the AF_UNIX socket named by $NOTIFY_SOCKET ("@…" is the
// abstract namespace). With `Type=notify` the unit is started at READY=1; with `WatchdogSec=`
// the manager restarts a daemon whose WATCHDOG=1 pings stop. The pings come from the
// composition manager's timer loop, so a wedged manager is noticed, not just a dead process.
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What to send and when: the pure part of the protocol.
public struct SystemdNotifyPolicy: Sendable, Equatable {
    public var socketPath: String
    /// Half of WATCHDOG_USEC (systemd's advice): pings this often keep the daemon alive.
    public var watchdogPingInterval: Duration?

    /// nil when not started by a service manager (no NOTIFY_SOCKET). The watchdog applies
    /// when WATCHDOG_USEC is a positive number and WATCHDOG_PID, if set, is this process.
    public init?(environment: [String: String], pid: Int32) {
        guard let socket = environment["NOTIFY_SOCKET"], socket.hasPrefix("/") || socket.hasPrefix("@"), socket.utf8.count > 1 else {
            return nil
        }
        socketPath = socket
        if let text = environment["WATCHDOG_USEC"], let microseconds = Int64(text), microseconds > 0,
           environment["WATCHDOG_PID"].map({ Int32($0) == pid }) ?? true {
            watchdogPingInterval = .microseconds(microseconds / 2)
        } else {
            watchdogPingInterval = nil
        }
    }

    /// The STATUS= line the manager shows in `systemctl status`.
    public static func status(runningCompositions: Int, publishers: Int) -> String {
        let compositions = runningCompositions == 1 ? "1 composition running" : "\(runningCompositions) compositions running"
        return compositions + ", " + (publishers == 1 ? "1 publisher" : "\(publishers) publishers")
    }

    /// The datagram for one heartbeat: WATCHDOG=1 when a ping is due, STATUS= when it changed;
    /// nil when there is nothing to say.
    public func heartbeat(status: String, previousStatus: String?, lastPing: Duration?, now: Duration) -> String? {
        var lines: [String] = []
        if let interval = watchdogPingInterval, lastPing.map({ now - $0 >= interval }) ?? true { lines.append("WATCHDOG=1") }
        if status != previousStatus { lines.append("STATUS=" + status) }
        return lines.isEmpty ? nil : lines.joined(separator: "\n")
    }
}

/// Sends the notifications. Failures are counted, never fatal: a daemon must not stop
/// because its manager's socket went away.
public final class SystemdNotifier: Sendable {
    public let policy: SystemdNotifyPolicy
    private let descriptor: Int32
    private let address: sockaddr_un
    private let addressLength: socklen_t
    private struct State {
        var lastPing: Duration?
        var status: String?
        var failures = 0
    }
    private let state = Mutex(State())
    private let started = ContinuousClock.now

    /// From the process environment; nil outside a `Type=notify` unit.
    public static func fromEnvironment() -> SystemdNotifier? {
        SystemdNotifyPolicy(environment: ProcessInfo.processInfo.environment, pid: getpid()).flatMap(SystemdNotifier.init)
    }

    public init?(policy: SystemdNotifyPolicy) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(policy.socketPath.utf8)
        let abstract = path.first == UInt8(ascii: "@")
        if abstract { path[0] = 0 }
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: path) }
        #if canImport(Glibc)
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let descriptor = socket(AF_UNIX, SOCK_DGRAM, 0)
        #endif
        guard descriptor >= 0 else { return nil }
        self.policy = policy
        self.descriptor = descriptor
        self.address = address
        // A pathname address counts its terminating NUL; an abstract one is exactly its bytes.
        addressLength = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (abstract ? 0 : 1))
    }

    deinit { close(descriptor) }

    /// Messages that could not be sent.
    public var failures: Int { state.withLock { $0.failures } }

    /// READY=1 with a first status: the API listens.
    public func ready(status: String) {
        state.withLock { $0.status = status; $0.lastPing = ContinuousClock.now - started }
        send("READY=1\nSTATUS=\(status)" + (policy.watchdogPingInterval == nil ? "" : "\nWATCHDOG=1"))
    }

    /// From the manager's loop: pings the watchdog when due and updates the status.
    public func heartbeat(status: String) {
        let now = ContinuousClock.now - started
        let message: String? = state.withLock { state in
            guard let message = policy.heartbeat(status: status, previousStatus: state.status, lastPing: state.lastPing, now: now) else {
                return nil
            }
            if message.contains("WATCHDOG=1") { state.lastPing = now }
            state.status = status
            return message
        }
        if let message { send(message) }
    }

    /// Graceful shutdown has begun.
    public func stopping(status: String) {
        send("STOPPING=1\nSTATUS=\(status)")
    }

    private func send(_ message: String) {
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bytes.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), address, addressLength) }
            }
        }
        if sent != bytes.count { state.withLock { $0.failures += 1 } }
    }
}
