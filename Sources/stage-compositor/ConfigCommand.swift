import ArgumentParser
import Foundation
import Server

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Configuration file helpers.",
        subcommands: [Check.self]
    )

    /// `stage-compositor config check FILE`: every problem on its own line, exit 1 if any.
    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Validate a serve configuration file and print every problem found.",
            discussion: """
            The file is JSON (deploy/README.md has every field, deploy/config.example.json an example). \
            Required: region, account, stateDirectory. Optional: listen {host, port} (default 127.0.0.1:8086), \
            auth {enabled, accessKeys {id: secret}}, stages [{arn | id, name, source}], stageSourceRoots [dir], \
            channels [{arn, ingestEndpoint, streamKey, reconnect {maxRetries, baseIntervalSeconds}}], \
            buckets {name: dir}, quotas {concurrentCompositions, encoderConfigurations, storageConfigurations, \
            publishersPerStage}, lifecycle {idleTimeoutSeconds, maximumDurationSeconds, retentionSeconds, \
            shutdownGraceSeconds}, events {file, stdout, webhook {url, maxAttempts}}, maxRequestBodyBytes, \
            encoderPreset, logLevel, database {url, callTimeoutSeconds, nodeId, leaseTtlSeconds, heartbeatSeconds, fleet {secret, internalURL, advertisedURL, capacityMillicores}}. \
            Relative paths are taken from the file's folder.
            """
        )

        @Argument(help: "The configuration file.")
        var file: String

        func run() throws {
            do {
                let (configuration, warnings) = try ServerConfiguration.load(path: file)
                for warning in warnings { print("warning: \(warning)") }
                print("\(file): OK (listen \(configuration.listen.host):\(configuration.listen.port), "
                      + "\(configuration.stages.count) stage(s), \(configuration.channels.count) channel(s), "
                      + "\(configuration.buckets.count) bucket(s))")
            } catch {
                FileHandle.standardError.write(Data("error: \(error)\n".utf8))
                throw ExitCode(1)
            }
        }
    }
}
