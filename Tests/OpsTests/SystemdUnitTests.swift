import Foundation
import Testing

@Suite("systemd unit")
struct SystemdUnitTests {
    static let unitPath = repositoryRoot.appendingPathComponent("systemd/stage-compositor.service")
    static let systemdAnalyze = "/usr/bin/systemd-analyze"

    func unitText() throws -> String {
        try String(contentsOf: Self.unitPath, encoding: .utf8)
    }

    /// A copy of the unit whose ExecStart names a stand-in executable, because
    /// `systemd-analyze verify` refuses a binary that does not exist.
    func verifiableCopy(replacing edit: (String) -> String = { $0 }) throws -> URL {
        let directory = try makeTemporaryDirectory()
        let binary = directory.appendingPathComponent("stage-compositor")
        try "#!/bin/sh\nexit 0\n".write(to: binary, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: binary.path)
        let text = edit(try unitText()).replacingOccurrences(of: "/usr/local/bin/stage-compositor", with: binary.path)
        let copy = directory.appendingPathComponent("stage-compositor.service")
        try text.write(to: copy, atomically: true, encoding: .utf8)
        return copy
    }

    func requireAnalyze() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.systemdAnalyze),
                     "systemd-analyze is missing: apt-get install systemd")
    }

    @Test("systemd-analyze verify accepts the unit without a single warning")
    func verify() async throws {
        try requireAnalyze()
        let copy = try verifiableCopy()
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let result = try await runCommand(Self.systemdAnalyze, ["verify", copy.path])
        #expect(result.status == 0)
        #expect(result.standardError == "", "systemd-analyze verify: \(result.standardError)")
    }

    @Test("the verify check catches a bad directive")
    func verifyCatchesMistakes() async throws {
        try requireAnalyze()
        let copy = try verifiableCopy { $0.replacingOccurrences(of: "ProtectSystem=strict", with: "ProtectSystem=bogus") }
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let result = try await runCommand(Self.systemdAnalyze, ["verify", copy.path])
        #expect(result.standardError.contains("bogus") || result.status != 0)
    }

    @Test("systemd-analyze security rates the sandbox OK (exposure at most 2.0)")
    func exposure() async throws {
        try requireAnalyze()
        let copy = try verifiableCopy()
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let result = try await runCommand(Self.systemdAnalyze, ["security", "--offline=yes", "--no-pager", copy.path])
        let line = try #require(result.standardOutput.split(separator: "\n")
            .first { $0.contains("Overall exposure level") }, "no exposure line in \(result.standardOutput)")
        let number = line.split(separator: " ").compactMap { Double($0) }.first
        let exposure = try #require(number)
        #expect(exposure <= 2.0)
    }

    @Test("service, user, state directory, restart and stop settings")
    func serviceSettings() throws {
        let directives = Dictionary(unitDirectives(try unitText(), section: "Service").map { ($0.key, $0.value) },
                                    uniquingKeysWith: { $1 })
        #expect(directives["ExecStart"] == "/usr/local/bin/stage-compositor serve --config /etc/stage-compositor/config.json")
        #expect(directives["User"] == "stage-compositor")
        #expect(directives["Group"] == "stage-compositor")
        #expect(directives["StateDirectory"] == "stage-compositor")
        #expect(directives["Restart"] == "on-failure")
        #expect(directives["KillSignal"] == "SIGTERM")

        // Stop timeout: longer than the shutdown grace period plus the webhook flush (5 s).
        let example = try JSONSerialization.jsonObject(
            with: Data(contentsOf: repositoryRoot.appendingPathComponent("deploy/config.example.json"))) as? [String: Any]
        let drain = try #require((example?["lifecycle"] as? [String: Any])?["shutdownGraceSeconds"] as? Int)
        let stop = try #require(directives["TimeoutStopSec"].flatMap { Int($0.replacingOccurrences(of: "s", with: "")) })
        #expect(stop >= drain + 5 + 5, "TimeoutStopSec \(stop) s leaves no margin over a \(drain) s drain")
    }

    @Test("hardening directives")
    func hardening() throws {
        let directives = unitDirectives(try unitText(), section: "Service")
        let required: [String: String] = [
            "NoNewPrivileges": "yes", "ProtectSystem": "strict", "PrivateTmp": "yes", "ProtectHome": "yes",
            "PrivateDevices": "yes", "ProtectKernelTunables": "yes", "ProtectKernelModules": "yes",
            "ProtectControlGroups": "yes", "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
            "LockPersonality": "yes", "MemoryDenyWriteExecute": "yes",
            "CapabilityBoundingSet": "",
        ]
        for (key, value) in required.sorted(by: { $0.key < $1.key }) {
            let values = directives.filter { $0.key == key }.map(\.value)
            #expect(values == [value], "\(key)")
        }
        // Memory and tasks bounded (a runaway daemon must not take the host with it).
        for key in ["MemoryHigh", "MemoryMax", "TasksMax"] {
            #expect(directives.contains { $0.key == key && !$0.value.isEmpty && $0.value != "infinity" }, "\(key)")
        }
        #expect(directives.filter { $0.key == "SystemCallFilter" }.map(\.value) == ["@system-service", "~@privileged"])
        let writable = directives.filter { $0.key == "ReadWritePaths" }.flatMap { $0.value.split(separator: " ") }
        #expect(writable.contains("/var/lib/stage-compositor"))
        #expect(writable.contains("-/srv/stage-compositor"))
    }
}
