// systemd notifications (the policy, and the notifier against a real datagram socket) and the
// embedded defaults of `serve` without `--config`.
import Foundation
@testable import Server
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct SystemdNotifyPolicyTests {
    @Test func withoutNotifySocketThereIsNothingToNotify() {
        #expect(SystemdNotifyPolicy(environment: [:], pid: 1) == nil)
        #expect(SystemdNotifyPolicy(environment: ["NOTIFY_SOCKET": ""], pid: 1) == nil)
        #expect(SystemdNotifyPolicy(environment: ["NOTIFY_SOCKET": "relative/path"], pid: 1) == nil)
        #expect(SystemdNotifyPolicy(environment: ["NOTIFY_SOCKET": "@"], pid: 1) == nil)
    }

    @Test func watchdogPingsAtHalfTheIntervalForThisProcessOnly() {
        let path = ["NOTIFY_SOCKET": "/run/systemd/notify"]
        #expect(SystemdNotifyPolicy(environment: path, pid: 7)?.watchdogPingInterval == nil)
        #expect(SystemdNotifyPolicy(environment: path.merging(["WATCHDOG_USEC": "30000000"]) { $1 }, pid: 7)?
            .watchdogPingInterval == .seconds(15))
        #expect(SystemdNotifyPolicy(environment: path.merging(["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "7"]) { $1 }, pid: 7)?
            .watchdogPingInterval == .seconds(15))
        #expect(SystemdNotifyPolicy(environment: path.merging(["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "8"]) { $1 }, pid: 7)?
            .watchdogPingInterval == nil)
        #expect(SystemdNotifyPolicy(environment: path.merging(["WATCHDOG_USEC": "0"]) { $1 }, pid: 7)?.watchdogPingInterval == nil)
        #expect(SystemdNotifyPolicy(environment: path.merging(["WATCHDOG_USEC": "soon"]) { $1 }, pid: 7)?.watchdogPingInterval == nil)
        #expect(SystemdNotifyPolicy(environment: ["NOTIFY_SOCKET": "@abstract"], pid: 7)?.socketPath == "@abstract")
    }

    @Test func heartbeatSaysWhatIsDueAndWhatChanged() throws {
        let policy = try #require(SystemdNotifyPolicy(environment: ["NOTIFY_SOCKET": "/n", "WATCHDOG_USEC": "2000000"], pid: 1))
        #expect(policy.heartbeat(status: "a", previousStatus: nil, lastPing: nil, now: .zero) == "WATCHDOG=1\nSTATUS=a")
        #expect(policy.heartbeat(status: "a", previousStatus: "a", lastPing: .zero, now: .milliseconds(999)) == nil)
        #expect(policy.heartbeat(status: "a", previousStatus: "a", lastPing: .zero, now: .seconds(1)) == "WATCHDOG=1")
        #expect(policy.heartbeat(status: "b", previousStatus: "a", lastPing: .zero, now: .milliseconds(10)) == "STATUS=b")
        let noWatchdog = try #require(SystemdNotifyPolicy(environment: ["NOTIFY_SOCKET": "/n"], pid: 1))
        #expect(noWatchdog.heartbeat(status: "a", previousStatus: "a", lastPing: nil, now: .seconds(100)) == nil)
    }

    @Test func statusLine() {
        #expect(SystemdNotifyPolicy.status(runningCompositions: 0, publishers: 0) == "0 compositions running, 0 publishers")
        #expect(SystemdNotifyPolicy.status(runningCompositions: 1, publishers: 1) == "1 composition running, 1 publisher")
        #expect(SystemdNotifyPolicy.status(runningCompositions: 3, publishers: 12) == "3 compositions running, 12 publishers")
    }
}

/// The manager's end: a bound AF_UNIX datagram socket.
final class DatagramListener {
    let descriptor: Int32
    let path: String

    init(path: String) throws {
        self.path = path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(descriptor >= 0 && bound == 0, "bind \(path): errno \(errno)")
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        close(descriptor)
        unlink(path)
    }

    /// The next datagram (nil after 5 s).
    func receive() -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }
}

@Suite struct SystemdNotifierTests {
    @Test func sendsReadyStatusWatchdogAndStoppingAsDatagrams() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(UUID().uuidString.prefix(8)).sock").path
        let listener = try DatagramListener(path: path)
        let policy = try #require(SystemdNotifyPolicy(environment: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "60000000"], pid: getpid()))
        let notifier = try #require(SystemdNotifier(policy: policy))
        notifier.ready(status: "listening on 127.0.0.1:8086")
        #expect(listener.receive() == "READY=1\nSTATUS=listening on 127.0.0.1:8086\nWATCHDOG=1")
        // Just pinged: only a changed status is sent.
        notifier.heartbeat(status: "listening on 127.0.0.1:8086")
        notifier.heartbeat(status: "1 composition running, 2 publishers")
        #expect(listener.receive() == "STATUS=1 composition running, 2 publishers")
        notifier.stopping(status: "stopping")
        #expect(listener.receive() == "STOPPING=1\nSTATUS=stopping")
        #expect(notifier.failures == 0)
    }

    @Test func aMissingSocketIsCountedNotFatal() throws {
        let policy = try #require(SystemdNotifyPolicy(environment: ["NOTIFY_SOCKET": "/nonexistent/notify.sock"], pid: 1))
        let notifier = try #require(SystemdNotifier(policy: policy))
        notifier.ready(status: "x")
        notifier.heartbeat(status: "y")
        #expect(notifier.failures == 2)
    }

    @Test func aPathTooLongForSockaddrIsRefused() {
        let policy = SystemdNotifyPolicy(environment: ["NOTIFY_SOCKET": "/" + String(repeating: "a", count: 200)], pid: 1)
        #expect(policy != nil)
        #expect(policy.flatMap(SystemdNotifier.init) == nil)
    }
}

@Suite struct EmbeddedDefaultsTests {
    func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("defaults-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func stateOutsideTheCheckoutAndABucketInside() throws {
        let cwd = try folder()
        let plain = ServerConfiguration.embeddedDefaults(.init(environment: [:], workingDirectory: cwd, executablePath: "/x/bin/sc"))
        #expect(plain.stateDirectory == cwd + "/stage-compositor-state")
        #expect(plain.buckets == ["recordings": .directory(cwd + "/stage-compositor-state/buckets/recordings")])
        #expect(plain.listen.host == "127.0.0.1" && plain.listen.port == 8086)
        #expect(plain.ingest.rtmp.host == "127.0.0.1" && plain.ingest.rtmps.host == "127.0.0.1")
        #expect(!plain.auth.enabled)
        #expect(plain.validate().isEmpty, "\(plain.validate())")
        let xdg = ServerConfiguration.embeddedDefaults(.init(environment: ["XDG_STATE_HOME": "st"], workingDirectory: cwd,
                                                             executablePath: "/x/bin/sc"))
        #expect(xdg.stateDirectory == cwd + "/st/stage-compositor")
        #expect(xdg.buckets["recordings"] == .directory(cwd + "/st/stage-compositor/buckets/recordings"))
        let home = ServerConfiguration.embeddedDefaults(.init(environment: ["HOME": "/home/op"], workingDirectory: cwd,
                                                              executablePath: "/x/bin/sc"))
        #expect(home.stateDirectory == "/home/op/.local/state/stage-compositor")
        let systemd = ServerConfiguration.embeddedDefaults(.init(environment: ["STATE_DIRECTORY": "/var/lib/sc:/var/lib/other",
                                                                               "XDG_STATE_HOME": "st", "HOME": "/home/op"],
                                                                 workingDirectory: cwd, executablePath: "/x/bin/sc"))
        #expect(systemd.stateDirectory == "/var/lib/sc")
    }

    @Test func bundledStagesAreTheFixturesOrTheInstalledShare() throws {
        let files = FileManager.default
        let cwd = try folder()
        // Installed layout: <prefix>/bin/stage-compositor and <prefix>/share/stage-compositor/stages.
        let prefix = try folder()
        let share = prefix + "/share/stage-compositor/stages"
        for name in ["four-grid", "not a stage id", "no-manifest"] {
            try files.createDirectory(atPath: share + "/" + name, withIntermediateDirectories: true)
            if name != "no-manifest" { try Data("{}".utf8).write(to: URL(fileURLWithPath: share + "/" + name + "/manifest.json")) }
        }
        let installed = ServerConfiguration.embeddedDefaults(.init(environment: [:], workingDirectory: cwd,
                                                                   executablePath: prefix + "/bin/stage-compositor"))
        #expect(installed.stageSourceRoots == [share])
        #expect(installed.stages == [.init(id: "four-grid", name: "four-grid", source: share + "/four-grid")])
        #expect(installed.validate().isEmpty)
        // A checkout: its fixtures come first.
        try files.createDirectory(atPath: cwd + "/fixtures/two-people", withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: cwd + "/fixtures/two-people/manifest.json"))
        let checkout = ServerConfiguration.embeddedDefaults(.init(environment: [:], workingDirectory: cwd,
                                                                  executablePath: prefix + "/bin/stage-compositor"))
        #expect(checkout.stages.map(\.id) == ["two-people"])
        #expect(checkout.stageArn(for: checkout.stages[0]) == "arn:aws:ivs:us-east-1:123456789012:stage/two-people")
    }
}
