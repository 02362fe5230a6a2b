import Foundation
import Testing

@Suite("deploy/install.sh")
struct InstallScriptTests {
    static let script = repositoryRoot.appendingPathComponent("deploy/install.sh").path

    func fakeBinary(in directory: URL) throws -> URL {
        let binary = directory.appendingPathComponent("stage-compositor-build")
        try "#!/bin/sh\necho fake\n".write(to: binary, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: binary.path)
        return binary
    }

    func mode(_ url: URL) throws -> Int {
        try (FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test("DESTDIR install: binary, unit, config, docs, demo stage; an edited config survives a reinstall")
    func destdirInstall() async throws {
        let work = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: work) }
        let root = work.appendingPathComponent("root")
        let binary = try fakeBinary(in: work)
        let first = try await runCommand("/bin/sh", [Self.script, "--binary", binary.path], environment: ["DESTDIR": root.path])
        #expect(first.status == 0, "\(first.standardError)")

        let installedBinary = root.appendingPathComponent("usr/local/bin/stage-compositor")
        let unit = root.appendingPathComponent("etc/systemd/system/stage-compositor.service")
        let config = root.appendingPathComponent("etc/stage-compositor/config.json")
        #expect(try mode(installedBinary) == 0o755)
        #expect(try mode(unit) == 0o644)
        #expect(try mode(config) == 0o640)
        #expect(try mode(root.appendingPathComponent("etc/stage-compositor")) == 0o750)
        #expect(try Data(contentsOf: unit)
            == Data(contentsOf: repositoryRoot.appendingPathComponent("systemd/stage-compositor.service")))
        #expect(try Data(contentsOf: config)
            == Data(contentsOf: repositoryRoot.appendingPathComponent("deploy/config.example.json")))
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent(
            "usr/local/share/stage-compositor/stages/four-grid").path))
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent(
            "usr/local/share/doc/stage-compositor/README.md").path))

        try #"{"edited":true}"#.write(to: config, atomically: true, encoding: .utf8)
        let second = try await runCommand("/bin/sh", [Self.script, "--binary", binary.path], environment: ["DESTDIR": root.path])
        #expect(second.status == 0)
        #expect(second.standardOutput.contains("keeping existing"))
        #expect(try String(contentsOf: config, encoding: .utf8) == #"{"edited":true}"#)
    }

    @Test("--dry-run changes nothing and prints every step")
    func dryRun() async throws {
        let work = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: work) }
        let root = work.appendingPathComponent("root")
        let binary = try fakeBinary(in: work)
        let result = try await runCommand("/bin/sh", [Self.script, "--dry-run", "--binary", binary.path],
                                    environment: ["DESTDIR": root.path])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(!FileManager.default.fileExists(atPath: root.path))
        for step in ["install -D -m 0755 \(binary.path) \(root.path)/usr/local/bin/stage-compositor",
                     "\(root.path)/etc/systemd/system/stage-compositor.service",
                     "install -m 0640", "\(root.path)/etc/stage-compositor/config.json"] {
            #expect(result.standardOutput.contains(step), "\(step)")
        }
    }

    @Test("a missing binary is an error outside --dry-run")
    func missingBinary() async throws {
        let work = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: work) }
        let result = try await runCommand("/bin/sh", [Self.script, "--binary", work.appendingPathComponent("none").path],
                                    environment: ["DESTDIR": work.appendingPathComponent("root").path])
        #expect(result.status != 0)
        #expect(result.standardError.contains("missing"))
    }

    @Test("an unknown option is refused")
    func unknownOption() async throws {
        let result = try await runCommand("/bin/sh", [Self.script, "--frobnicate"], environment: ["DESTDIR": "/nonexistent"])
        #expect(result.status == 2)
    }
}

@Suite("deploy/config.example.json")
struct ConfigExampleTests {
    /// The configuration fields agreed with the daemon (`serve --config`).
    static let agreedFields: Set<String> = [
        "region", "account", "listen.host", "listen.port", "stateDirectory",
        "auth.enabled", "auth.accessKeys",
        "stages[].arn", "stages[].source", "stageSourceRoots[]",
        "channels[].arn", "channels[].ingestEndpoint", "channels[].streamKey",
        "channels[].reconnect.maxRetries", "channels[].reconnect.baseIntervalSeconds",
        "buckets", "spool.maxBytes", "spool.drainTimeoutSeconds",
        "quotas.concurrentCompositions", "quotas.encoderConfigurations", "quotas.storageConfigurations",
        "quotas.publishersPerStage", "quotas.ingestConfigurations", "quotas.stages",
        "lifecycle.idleTimeoutSeconds", "lifecycle.maximumDurationSeconds", "lifecycle.retentionSeconds",
        "lifecycle.shutdownGraceSeconds",
        "events.file", "events.stdout", "events.webhook", "maxRequestBodyBytes", "encoderPreset", "logLevel",
        "overlays.defaultFont",
        "ingest.rtmp.enabled", "ingest.rtmp.host", "ingest.rtmp.port", "ingest.rtmps.enabled", "ingest.rtmps.host",
        "ingest.rtmps.port", "ingest.rtmps.multitrackFitsTiles", "ingest.publicHost", "ingest.latencyMs", "ingest.minimumLatencyMs", "ingest.videoStoppedAfterSeconds", "ingest.maxBitrate",
        "ingest.handshakeTimeoutSeconds", "ingest.idleTimeoutSeconds",
        "ingest.whip.enabled", "ingest.whip.host", "ingest.whip.port", "ingest.whip.advertisedHost",
        "ingest.whip.consentTimeoutSeconds", "ingest.whip.acceptSimulcast", "ingest.whip.simulcastLayerFitsTiles", "ingest.whip.maxSessions",
        "ingest.whip.maxSessionsPerAddress", "ingest.whip.maxViewers", "ingest.whip.maxViewersPerAddress", "ingest.whip.maxViewersPerComposition",
    ]

    /// Leaf paths of a JSON value; `auth.accessKeys` and `buckets` are maps, so leaves.
    func leafPaths(_ value: Any, prefix: String) -> Set<String> {
        if prefix == "auth.accessKeys" || prefix == "buckets" { return [prefix] }
        if let object = value as? [String: Any] {
            return object.reduce(into: []) { paths, entry in
                paths.formUnion(leafPaths(entry.value, prefix: prefix.isEmpty ? entry.key : "\(prefix).\(entry.key)"))
            }
        }
        if let array = value as? [Any] {
            return array.reduce(into: []) { $0.formUnion(leafPaths($1, prefix: prefix + "[]")) }
        }
        return [prefix]
    }

    func example() throws -> [String: Any] {
        let data = try Data(contentsOf: repositoryRoot.appendingPathComponent("deploy/config.example.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("valid JSON with exactly the agreed fields")
    func fields() throws {
        #expect(leafPaths(try example(), prefix: "") == Self.agreedFields)
    }

    @Test("safe defaults: loopback, auth off, lifecycle numbers of the spec")
    func defaults() throws {
        let config = try example()
        #expect((config["listen"] as? [String: Any])?["host"] as? String == "127.0.0.1")
        #expect((config["listen"] as? [String: Any])?["port"] as? Int == 8086)
        let lifecycle = try #require(config["lifecycle"] as? [String: Any])
        #expect(lifecycle["idleTimeoutSeconds"] as? Int == 60)
        #expect(lifecycle["maximumDurationSeconds"] as? Int == 86_400)
        #expect(lifecycle["retentionSeconds"] as? Int == 300)
        #expect((config["auth"] as? [String: Any])?["enabled"] as? Bool == false)
        let quotas = try #require(config["quotas"] as? [String: Any])
        #expect(quotas["concurrentCompositions"] as? Int == 5)
        #expect(quotas["publishersPerStage"] as? Int == 12)
    }

    @Test("deploy/README.md documents every field")
    func documented() throws {
        let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("deploy/README.md"), encoding: .utf8)
        for field in Self.agreedFields.union(["events.webhook.url", "events.webhook.maxAttempts"]).sorted() {
            #expect(readme.contains("`\(field)`"), "\(field) is not documented")
        }
    }
}
