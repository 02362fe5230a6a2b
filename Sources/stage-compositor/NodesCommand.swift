// `stage-compositor nodes --config FILE`: the daemons registered in the configuration's
// PostgreSQL database, with their leases, load and stages.
import ArgumentParser
import Foundation
import Logging
import PostgresStore
import Server

struct NodesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nodes",
        abstract: "List the daemons registered in the configuration's PostgreSQL database (database.url).")

    @Option(help: "The serve configuration file that names the database.")
    var config: String

    func run() async throws {
        let configuration: ServerConfiguration
        do {
            configuration = try ServerConfiguration.load(path: config).0
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode(1)
        }
        guard let text = configuration.database.url, let url = try? PostgresDatabaseURL.parse(text).get() else {
            FileHandle.standardError.write(Data("error: \(config) has no database.url: a daemon on SQLite is a node of its own\n".utf8))
            throw ExitCode(1)
        }
        var logger = Logger(label: "stage-compositor.nodes")
        logger.logLevel = .error
        let nodes = try await PostgresCompositionStore.withStore(url: url, callTimeout: .seconds(10), logger: logger) { store in
            try await store.fleetNodes()
        }
        print(Self.table(nodes))
    }

    static func table(_ nodes: [FleetNodeStatus]) -> String {
        guard !nodes.isEmpty else { return "no nodes registered" }
        let header = ["NODE", "INCARNATION", "STATE", "LEASE", "CPU RESERVED", "CPU MEASURED", "STAGES", "API"]
        let rows = nodes.map { node -> [String] in
            let state = !node.live ? "expired" : node.draining ? "draining" : "live"
            let lease = String(format: "%.1fs", Double(node.leaseRemainingMs) / 1000)
            let cpu = "\(node.reservedMillicores)/\(node.registration.capacityMillicores)m"
            return [node.registration.nodeId, "\(node.incarnation)", state, lease, cpu, "\(node.measuredMillicores)m",
                    "\(node.stages.count)", node.registration.apiURL]
        }
        var text = aligned([header] + rows)
        // Then each placed stage and its node.
        let placements = nodes.flatMap { node in node.stages.map { [node.registration.nodeId, $0] } }
        if !placements.isEmpty { text += "\n\n" + aligned([["NODE", "STAGE"]] + placements) }
        return text
    }

    static func aligned(_ rows: [[String]]) -> String {
        let widths = (rows.first ?? []).indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  ")
                .trimmingCharacters(in: .whitespaces)
        }.joined(separator: "\n")
    }
}
