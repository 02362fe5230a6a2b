// `config check` and `serve` reading a configuration file: every problem at once, unknown keys
// at any depth with the nearest known key, partial objects filled with defaults, formats of
// region and account, bucket directories that can be written, and `serve --listen`.
import Foundation
import Pipeline
@testable import Server
import Testing

@Suite struct ConfigurationCheckTests {
    let base = #""region": "us-east-1", "account": "123456789012", "stateDirectory": "state""#

    func check(_ json: String, unknownKeys: ServerConfiguration.UnknownKeys = .reject) -> ServerConfiguration.CheckReport {
        ServerConfiguration.check(Data(json.utf8), relativeTo: "/tmp/configuration-check", unknownKeys: unknownKeys)
    }

    /// Through the file loader, as `serve` and `config check` read it.
    func load(_ json: String, unknownKeys: ServerConfiguration.UnknownKeys) throws -> Result<[String], ServerConfiguration.LoadError> {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("configuration-\(UUID().uuidString).json")
        try Data(json.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        do throws(ServerConfiguration.LoadError) {
            return .success(try ServerConfiguration.load(path: file.path, unknownKeys: unknownKeys).warnings)
        } catch {
            return .failure(error)
        }
    }

    static let typos = """
        "listen": {"host": "127.0.0.1", "alowedHosts": ["studio.example"]},
        "lifecycle": {"idleTimeoutSecond": 30},
        "ingest": {"rtmp": {"prot": 1940}}
        """
    static let typoProblems = [
        #"ingest.rtmp.prot: unknown key, did you mean "port"?"#,
        #"lifecycle.idleTimeoutSecond: unknown key, did you mean "idleTimeoutSeconds"?"#,
        #"listen.alowedHosts: unknown key, did you mean "allowedHosts"?"#,
    ]

    @Test func theIssuesThreeTyposAreEachReportedWithTheKeyMeant() throws {
        let failure = try load("{\(base), \(Self.typos)}", unknownKeys: .reject)
        guard case .failure(let error) = failure else {
            Issue.record("config check accepted three unknown keys")
            return
        }
        #expect(error.problems == Self.typoProblems)
        // serve: warned about, and it starts.
        let warnings = try load("{\(base), \(Self.typos)}", unknownKeys: .warn).get()
        #expect(Self.typoProblems.allSatisfy { problem in warnings.contains(problem + " (ignored)") }, "\(warnings)")
    }

    @Test func fiveProblemsAreFiveLines() throws {
        let json = """
            {"region": "us-east-1", "account": "12345678901", "stateDirectory": "state",
             "listen": {"host": "127.0.0.1", "port": "8086", "alowedHosts": ["studio.example"]},
             "lifecycle": {"idleTimeoutSecond": 30}, "ingest": {"rtmp": {"prot": 1940}}}
            """
        guard case .failure(let error) = try load(json, unknownKeys: .reject) else {
            Issue.record("accepted")
            return
        }
        #expect(error.problems == [#"listen.port: expected a whole number (Int), found the string "8086""#] + Self.typoProblems
                + [#"account: "12345678901" is not an account ID (12 digits)"#])
    }

    @Test func everyTypeErrorIsReportedNotOnlyTheFirst() {
        let report = check("""
            {"region": "us-east-1", "stateDirectory": "state",
             "listen": {"port": "80"}, "quotas": {"stages": true}, "lifecycle": {"retentionSeconds": "5 min"},
             "ingest": {"whip": {"port": 70000.5}}, "stages": [{"id": 7}], "channels": [{"arn": "arn:aws:ivs:us-east-1:123456789012:channel/c"}]}
            """)
        #expect(report.configuration == nil)
        #expect(report.problems == [
            "account: is required",
            #"listen.port: expected a whole number (Int), found the string "80""#,
            "stages[0].id: expected a string, found 7",
            "channels[0].ingestEndpoint: is required",
            "channels[0].streamKey: is required",
            "quotas.stages: expected a whole number (Int), found true/false",
            #"lifecycle.retentionSeconds: expected a number, found the string "5 min""#,
            "ingest.whip.port: expected a whole number (Int), found 70000.5",
        ], "\(report.problems)")
    }

    @Test func aPartialObjectTakesTheDefaultsForWhatItLeavesOut() throws {
        let report = check("""
            {\(base), "listen": {"host": "127.0.0.2"}, "ingest": {"rtmp": {"enabled": false}, "rtmps": {"host": "127.0.0.3"}},
             "channels": [{"arn": "arn:aws:ivs:us-east-1:123456789012:channel/c", "ingestEndpoint": "rtmps://x:443/app/",
                           "streamKey": "k", "reconnect": {"maxRetries": 2}}]}
            """)
        #expect(report.problems == [])
        let configuration = try #require(report.configuration)
        #expect(configuration.listen == ServerConfiguration.Listen(host: "127.0.0.2", port: 8086))
        #expect(configuration.ingest.rtmp == .init(enabled: false, host: "127.0.0.1", port: 1935))
        #expect(configuration.ingest.rtmps == .init(enabled: true, host: "127.0.0.3", port: 1936))
        #expect(configuration.channels[0].reconnect == .init(maxRetries: 2, baseIntervalSeconds: 2))
        // The plain decoder (tests, embedded use) agrees.
        let decoded = try JSONDecoder().decode(ServerConfiguration.self, from: Data(#"{\#(base), "listen": {"host": "127.0.0.2"}}"#.utf8))
        #expect(decoded.listen.port == 8086)
    }

    @Test func unknownKeysAreFoundAtEveryDepthButMapsTakeAnyName() {
        let report = check("""
            {\(base), "logLevle": "info",
             "stages": [{"id": "a", "sorce": "/x"}],
             "buckets": {"any-name-at-all": "rec", "cloud": {"s3": {"endpoint": "http://127.0.0.1:9000", "credentials": "environment",
                                                                 "requestTimeout": 5}}},
             "auth": {"enabled": false, "accessKeys": {"AKIDANY": "a-secret-of-sixteen"}},
             "database": {"fleet": {"secret": "0123456789abcdef", "caFil": "ca.pem"}},
             "zzz": 1}
            """)
        let unknown = report.problems.filter { $0.contains("unknown key") }
        #expect(unknown == [
            #"buckets.cloud.s3.requestTimeout: unknown key, did you mean "requestTimeoutSeconds"?"#,
            #"database.fleet.caFil: unknown key, did you mean "caFile"?"#,
            #"logLevle: unknown key, did you mean "logLevel"?"#,
            #"stages[0].sorce: unknown key, did you mean "source"?"#,
            "zzz: unknown key",
        ], "\(report.problems)")
    }

    @Test func theNewestKeysAreKnownWithoutBeingListedAnywhere() {
        let reading = ConfigurationReading(ServerConfiguration.self, from: Data("""
            {\(base), "listen": {"tls": {"certificateFile": "c.pem", "privateKeyFile": "k.pem"}, "idleTimeoutSeconds": 30},
             "database": {"url": "postgres://sc@db/sc", "fleet": {"secret": "0123456789abcdef", "caFile": "ca.pem",
                                                                  "drainTimeoutSeconds": 5}},
             "ingest": {"whip": {"dtlsDatagramBurst": 4}, "keyframeCacheBytes": 1048576}, "metrics": {"bearerToken": "t"}}
            """.utf8))
        #expect(reading.unknownKeys == [])
        #expect(reading.problems == [])
    }

    @Test func theShippedExamplePassesWithNoUnknownKeys() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("deploy/config.example.json")
        let report = ServerConfiguration.check(try Data(contentsOf: example), relativeTo: "/etc/stage-compositor", unknownKeys: .reject)
        #expect(report.problems == [])
        #expect(!report.warnings.contains { $0.contains("unknown key") })
    }

    @Test func regionAndAccountFormats() {
        for (region, account, expected) in [
            ("us-east-1", "123456789012", []),
            ("us-gov-west-1", "000000000000", []),
            ("US East", "12ab", [#"region: "US East" is not a region name (like us-east-1 or eu-west-2)"#,
                                 #"account: "12ab" is not an account ID (12 digits)"#]),
            ("us-east", "1234567890123", [#"region: "us-east" is not a region name (like us-east-1 or eu-west-2)"#,
                                          #"account: "1234567890123" is not an account ID (12 digits)"#]),
            ("useast-1", "١٢٣٤٥٦٧٨٩٠١٢", [#"region: "useast-1" is not a region name (like us-east-1 or eu-west-2)"#,
                                          #"account: "١٢٣٤٥٦٧٨٩٠١٢" is not an account ID (12 digits)"#]),
        ] {
            let configuration = ServerConfiguration(region: region, account: account, stateDirectory: "/tmp/x")
            #expect(configuration.validate() == expected, "\(region) \(account)")
        }
    }

    @Test func bucketDirectoriesMustBeWritable() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckets-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("existing"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("not a folder".utf8).write(to: folder.appendingPathComponent("file"))
        let problems = ServerConfiguration.check(Data("""
            {\(base), "buckets": {"fine": "existing", "later": "new/deeper", "blocked": "file/recordings", "plain-file": "file"}}
            """.utf8), relativeTo: folder.path, unknownKeys: .reject).problems
        #expect(problems == ["buckets.blocked: \(folder.path)/file/recordings cannot be made: \(folder.path)/file is not a directory",
                             "buckets.plain-file: \(folder.path)/file is not a directory"], "\(problems)")
        // serve makes them at start; what cannot be made stops it there.
        var configuration = ServerConfiguration(stateDirectory: folder.path)
        configuration.buckets = ["fine": .directory(folder.path + "/existing"), "later": .directory(folder.path + "/new/deeper")]
        #expect(configuration.prepareBucketDirectories() == [])
        #expect(FileManager.default.fileExists(atPath: folder.path + "/new/deeper"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path + "/existing") == [], "the probe is removed")
        configuration.buckets = ["blocked": .directory(folder.path + "/file/recordings")]
        #expect(configuration.prepareBucketDirectories().count == 1)
    }

    @Test func theOverlaysSectionHasDefaultsAndIsCheckedLikeTheOthers() throws {
        let defaults = try #require(check("{\(base)}").configuration)
        #expect(defaults.overlayDirectory == "/tmp/configuration-check/state/overlays")
        #expect(defaults.overlays.defaultFont == "DejaVu Sans")

        let given = check(#"{\#(base), "overlays": {"directory": "art", "defaultFont": "Noto Sans"}}"#)
        #expect(given.problems == [])
        let configuration = try #require(given.configuration)
        #expect(configuration.overlayDirectory == "/tmp/configuration-check/art")
        #expect(configuration.overlays.defaultFont == "Noto Sans")
        #expect(given.warnings.contains("overlays.directory: /tmp/configuration-check/art does not exist; "
                                        + "overlays that name image files are refused until it does"), "\(given.warnings)")

        #expect(check(#"{\#(base), "overlays": {"directry": "art"}}"#).problems
            == [#"overlays.directry: unknown key, did you mean "directory"?"#])
        #expect(check(#"{\#(base), "overlays": {"directory": "", "defaultFont": ""}}"#).problems
            == ["overlays.directory: must not be empty",
                "overlays.defaultFont: a font family name, 1 to 128 bytes without control characters"])
        #expect(check(#"{\#(base), "overlays": {"defaultFont": "Sans\u0007"}}"#).problems
            == ["overlays.defaultFont: a font family name, 1 to 128 bytes without control characters"])
        // A font that is not installed does not stop the daemon: a warning.
        #expect(!check("{\(base)}").warnings.contains { $0.hasPrefix("overlays.defaultFont") })
        let missingFont = check(#"{\#(base), "overlays": {"defaultFont": "No Such Family Xq"}}"#)
        #expect(missingFont.problems == [])
        #expect(missingFont.warnings.contains { $0.hasPrefix("overlays.defaultFont: no font of the family 'No Such Family Xq' is installed") })
    }

    /// `overlays.fontDirectory` adds its fonts to fontconfig's: tesseract's `pdf.ttf` (family
    /// "pdf", in no folder fontconfig reads) becomes a font descriptions may name.
    @Test func theFontDirectoryAddsItsFonts() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fonts-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.copyItem(atPath: "/usr/share/tesseract-ocr/5/tessdata/pdf.ttf", toPath: folder.appendingPathComponent("pdf.ttf").path)
        #expect(!OverlayAssets(directory: nil, defaultFont: "pdf").defaultFontExists)
        let missing = check(#"{\#(base), "overlays": {"fontDirectory": "no-such-fonts"}}"#)
        #expect(missing.warnings.contains { $0.hasPrefix("overlays.fontDirectory: /tmp/configuration-check/no-such-fonts is not a folder") },
                "\(missing.warnings)")
        let given = check(#"{\#(base), "overlays": {"fontDirectory": "\#(folder.path)", "defaultFont": "pdf"}}"#)
        #expect(given.problems == [] && !given.warnings.contains { $0.hasPrefix("overlays.") }, "\(given.warnings)")
        #expect(OverlayAssets(directory: nil, defaultFont: "pdf").defaultFontExists)
        #expect(check(#"{\#(base), "overlays": {"fontDirectory": ""}}"#).problems == ["overlays.fontDirectory: must not be empty"])
    }

    @Test func aConfigurationThatIsNotJSONIsOneProblem() {
        let report = check(#"{"region": "us-east-1", "account": }"#)
        #expect(report.problems.count == 1)
        #expect(report.problems.first?.hasPrefix("not valid JSON") == true)
    }

    @Test func listenOverridesForAFirstRunWithoutAFile() throws {
        let defaults = ServerConfiguration(stateDirectory: "/tmp/x")
        let changed = try ListenOverrides(listen: "0.0.0.0:9000", rtmpPort: 2935, rtmpsPort: 2936, whipPort: 2937).applied(to: defaults)
        #expect(changed.listen.host == "0.0.0.0" && changed.listen.port == 9000)
        #expect(changed.ingest.rtmp.port == 2935 && changed.ingest.rtmps.port == 2936 && changed.ingest.whip.port == 2937)
        #expect(try ListenOverrides.parse("[::1]:8087") == ("::1", 8087))
        #expect(try ListenOverrides.parse("8087") == (nil, 8087))
        for bad in ["::1:8087", "host:", ":80", "host:70000", "[::1]8087", "x"] {
            #expect(throws: ListenOverrides.Invalid.self, "\(bad)") { try ListenOverrides.parse(bad) }
        }
        // validate() judges the result: no auth on a public address is refused as from a file.
        #expect(changed.validate().contains { $0.hasPrefix("listen.host: 0.0.0.0 is reachable from other machines") })
    }

    @Test func suggestionsAreNearKeysOnly() {
        #expect(editDistance("prot", "port") == 1)
        #expect(editDistance("alowedHosts", "allowedHosts") == 1)
        #expect(nearestKey(to: "LogLevel", among: ["logLevel", "region"]) == "logLevel")
        #expect(nearestKey(to: "completelyDifferent", among: ["logLevel", "region"]) == nil)
    }
}
