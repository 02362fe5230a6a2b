import ArgumentParser
import FFmpeg
import Foundation
import Logging
import Prometheus
import PostgresStore
import Server

/// `stage-compositor serve --config FILE`: the daemon. Runs until SIGTERM/SIGINT, then stops
/// every running composition as StopComposition would and exits 0.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the IVS-compatible composition daemon (control plane on HTTP, compositions on worker threads)."
    )

    @Option(help: ArgumentHelp(
        "Configuration file (JSON); see `stage-compositor config check --help`.",
        discussion: "Without it: the API and ingest on loopback, state in $STATE_DIRECTORY (systemd), else "
            + "$XDG_STATE_HOME/stage-compositor, else ~/.local/state/stage-compositor, a local bucket \"recordings\" there, and the bundled recorded stages."))
    var config: String?

    @Option(name: .customLong("listen"), help: ArgumentHelp(
        "The API's address, HOST:PORT ([IPv6]:PORT, or PORT alone), instead of the configuration's.", valueName: "host:port"))
    var listenAddress: String?

    @Option(help: "The RTMP ingest port, instead of the configuration's (1935).")
    var rtmpPort: Int?

    @Option(help: "The RTMPS ingest port, instead of the configuration's (1936).")
    var rtmpsPort: Int?

    @Option(help: "The WHIP media (UDP) port, instead of the configuration's (1937).")
    var whipPort: Int?

    func run() async throws {
        var configuration: ServerConfiguration
        var warnings: [String] = []
        if let config {
            do throws(ServerConfiguration.LoadError) {
                (configuration, warnings) = try ServerConfiguration.load(path: config)
            } catch {
                for warning in error.warnings { FileHandle.standardError.write(Data("warning: \(warning)\n".utf8)) }
                FileHandle.standardError.write(Data(error.problems.map { "error: \(config): \($0)\n" }.joined().utf8))
                throw ExitCode(1)
            }
        } else {
            configuration = ServerConfiguration.embeddedDefaults(.current)
            warnings = configuration.availabilityWarnings()
        }
        let overrides = ListenOverrides(listen: listenAddress, rtmpPort: rtmpPort, rtmpsPort: rtmpsPort, whipPort: whipPort)
        let source = config ?? "embedded defaults"
        do {
            configuration = try overrides.applied(to: configuration)
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode(1)
        }
        // The file was validated as written; the defaults and the command line's addresses are judged here,
        // and local bucket directories are made now rather than by the first recording.
        let problems = configuration.validate() + configuration.prepareBucketDirectories()
        if !problems.isEmpty {
            FileHandle.standardError.write(Data(problems.map { "error: \(source): \($0)\n" }.joined().utf8))
            throw ExitCode(1)
        }
        FileHandle.standardOutput.write(Data((Self.summary(configuration, configFile: config) + "\n").utf8))
        let level = Logger.Level(rawValue: configuration.logLevel) ?? .info
        let format = DaemonLogHandler.Format(rawValue: configuration.logFormat) ?? .text
        LoggingSystem.bootstrap { label in
            var handler = DaemonLogHandler(label: label, format: format)
            handler.logLevel = level
            return handler
        }
        FFmpegLogging.setLevel(level <= .debug ? .warning : .quiet)
        var logger = Logger(label: "stage-compositor")
        logger.logLevel = level
        for warning in warnings { logger.warning("configuration: \(warning)") }
        let notifier = SystemdNotifier.fromEnvironment()
        if let notifier {
            logger.info("systemd notifications on", metadata: [
                "socket": "\(notifier.policy.socketPath)", "watchdog": "\(notifier.policy.watchdogPingInterval.map { "\($0 * 2)" } ?? "off")"])
        }
        try await runServer(configuration: configuration, dependencies: ServerDependencies(logger: logger, notifier: notifier))
        logger.notice("stage-compositor stopped")
    }

    /// What a user needs to start: the endpoint, how to call it, and where recordings go.
    static func summary(_ configuration: ServerConfiguration, configFile: String?) -> String {
        let endpoint = "http://\(configuration.listen.host.contains(":") ? "[\(configuration.listen.host)]" : configuration.listen.host)"
            + ":\(configuration.listen.port)"
        var lines = ["stage-compositor: " + (configFile.map { "configuration \($0)" } ?? "no --config, embedded defaults"),
                     "  API (AWS CLI, boto3): \(endpoint), region \(configuration.region)"
                         + (configuration.auth.enabled ? ", SigV4 access keys required" : ", authentication off")]
        for name in configuration.buckets.keys.sorted() {
            guard let bucket = configuration.buckets[name] else { continue }
            lines.append("  recordings: storage configurations with bucketName=\(name) write to \(bucket.summary)"
                         + (bucket.directory == nil ? " (spooled in \(configuration.spoolDirectory))" : ""))
        }
        lines.append("  state: \(configuration.stateDirectory)"
                     + (configuration.database.url.flatMap { try? PostgresDatabaseURL.parse($0).get() }
                         .map { ", control-plane database \($0)" } ?? ""))
        let stages = configuration.stages.compactMap { configuration.stageArn(for: $0) }
        lines.append("  stages: " + (stages.isEmpty ? "none defined (CreateStage makes live stages)" : stages.joined(separator: ", ")))
        lines.append("  try: aws ivs-realtime list-stages --endpoint-url \(endpoint) --region \(configuration.region)")
        return lines.joined(separator: "\n")
    }
}
