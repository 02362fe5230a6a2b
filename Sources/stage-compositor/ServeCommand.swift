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
        discussion: "Without it: the API and ingest on loopback, state in $XDG_STATE_HOME/stage-compositor (or "
            + "./stage-compositor-state), a local bucket \"recordings\" there, and the bundled recorded stages."))
    var config: String?

    func run() async throws {
        var configuration: ServerConfiguration
        var warnings: [String] = []
        if let config {
            do {
                (configuration, warnings) = try ServerConfiguration.load(path: config)
            } catch {
                FileHandle.standardError.write(Data("error: \(error)\n".utf8))
                throw ExitCode(1)
            }
        } else {
            configuration = ServerConfiguration.embeddedDefaults(.current)
            let problems = configuration.validate()
            if !problems.isEmpty {
                FileHandle.standardError.write(Data("error: embedded defaults: \(problems.joined(separator: "; "))\n".utf8))
                throw ExitCode(1)
            }
            warnings = configuration.availabilityWarnings()
        }
        FileHandle.standardOutput.write(Data((Self.summary(configuration, configFile: config) + "\n").utf8))
        let level = Logger.Level(rawValue: configuration.logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
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
