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
            encoderPreset, logLevel, logFormat (text or json), database {url, callTimeoutSeconds, nodeId, leaseTtlSeconds, heartbeatSeconds, fleet {secret, internalURL, advertisedURL, capacityMillicores}}. \
            Relative paths are taken from the file's folder. An object may give only some of its fields: the rest take \
            their defaults. Every problem is printed, one a line, each naming its key; a key the daemon does not know \
            (a misspelling) is a problem here, with the nearest known key suggested, and a warning in `serve`. Local \
            bucket directories must be writable.
            """
        )

        @Argument(help: "The configuration file.")
        var file: String

        func run() throws {
            do throws(ServerConfiguration.LoadError) {
                let (configuration, warnings) = try ServerConfiguration.load(path: file, unknownKeys: .reject)
                for warning in warnings { print("warning: \(warning)") }
                print("\(file): OK (listen \(configuration.listen.host):\(configuration.listen.port), "
                      + "\(configuration.stages.count) stage(s), \(configuration.channels.count) channel(s), "
                      + "\(configuration.buckets.count) bucket(s))")
            } catch {
                for warning in error.warnings { print("warning: \(warning)") }
                // One line a problem, as a compiler prints them.
                FileHandle.standardError.write(Data(error.problems.map { "\(file): error: \($0)\n" }.joined().utf8))
                throw ExitCode(1)
            }
        }
    }
}
