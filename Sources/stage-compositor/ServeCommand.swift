import ArgumentParser
import FFmpeg
import Foundation
import Logging
import Prometheus
import Server

/// `stage-compositor serve --config FILE`: the daemon. Runs until SIGTERM/SIGINT, then stops
/// every running composition as StopComposition would and exits 0.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the IVS-compatible composition daemon (control plane on HTTP, compositions on worker threads)."
    )

    @Option(help: "Configuration file (JSON); see `stage-compositor config check --help`.")
    var config: String

    func run() async throws {
        let configuration: ServerConfiguration
        let warnings: [String]
        do {
            (configuration, warnings) = try ServerConfiguration.load(path: config)
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode(1)
        }
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
        let app = try await buildApplication(configuration: configuration, dependencies: ServerDependencies(logger: logger))
        try await app.runService()
        logger.notice("stage-compositor stopped")
    }
}
