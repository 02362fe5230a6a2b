// What `compose --stage` accepts: a recorded stage directory (manifest.json), or the
// individual participant recordings of one stage session, as a local directory or an
// s3:// prefix (downloaded first: playlists, segments and metadata, not thumbnails).
import AsyncHTTPClient
import Foundation
import Logging
import Stages
import Storage
import Synchronization

struct StageInput {
    let stage: RecordedStage
    /// A description for stderr: what was found and where time 0 is.
    let summary: [String]
    /// Set when the recordings were downloaded: removed after the composition.
    let temporaryDirectory: URL?

    static func load(_ argument: String, logger: Logger) throws -> StageInput {
        if argument.hasPrefix("s3://") { return try download(argument, logger: logger) }
        let directory = URL(fileURLWithPath: argument, isDirectory: true).standardizedFileURL
        if FileManager.default.fileExists(atPath: directory.appendingPathComponent(RecordedStage.manifestName).path) {
            return StageInput(stage: try RecordedStage.load(from: argument), summary: [], temporaryDirectory: nil)
        }
        return try fromRecordings(directory: directory, source: argument, temporaryDirectory: nil)
    }

    /// The session directory under `directory`: itself when it holds participant recordings,
    /// else its one session subdirectory that does (a stage prefix with one session).
    private static func fromRecordings(directory: URL, source: String, temporaryDirectory: URL?) throws -> StageInput {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CLIFailure("--stage: \(source) is not a directory")
        }
        var root = directory
        var files = relativeFiles(under: root)
        if !files.contains(where: isRecordingEvent) {
            let sessions = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
            let withRecordings = sessions.sorted().filter { relativeFiles(under: root.appendingPathComponent($0)).contains(where: isRecordingEvent) }
            if withRecordings.count > 1 {
                throw CLIFailure("--stage: \(source) holds several stage sessions (\(withRecordings.joined(separator: ", "))): name one")
            }
            if let session = withRecordings.first {
                root = root.appendingPathComponent(session)
                files = relativeFiles(under: root)
            }
        }
        guard files.contains(where: isRecordingEvent) else {
            throw CLIFailure("--stage: no \(directory.appendingPathComponent(RecordedStage.manifestName).path) (a recorded stage) and no "
                             + "individual participant recordings (<participantId>/<timestamp>/events/recording-*.json) in \(source)")
        }
        let recordings = try SessionRecordings.read(files: files, source: root.path) { path in
            try Data(contentsOf: root.appendingPathComponent(path))
        }
        let manifest = recordings.manifest
        let stage = try RecordedStage.validated(manifest, directory: root, file: root.path)
        var summary = ["stage session \(root.lastPathComponent) of \(manifest.stageArn): \(recordings.recordings.count) recording(s) "
                       + "of \(manifest.participants.count) participant(s); time 0 = \(manifest.startedAt ?? "?"), "
                       + "\(Double(manifest.durationMs ?? 0) / 1000) s"]
        for participant in manifest.participants {
            let stretches = stride(from: 0, to: participant.timeline.count - 1, by: 2).map {
                "\(Double(participant.timeline[$0].atMs) / 1000)-\(Double(participant.timeline[$0 + 1].atMs) / 1000) s"
            }
            summary.append("  \(participant.participantId): \(stretches.joined(separator: ", "))")
        }
        summary += recordings.notes.map { "  note: \($0)" }
        return StageInput(stage: stage, summary: summary, temporaryDirectory: temporaryDirectory)
    }

    private static func isRecordingEvent(_ path: String) -> Bool {
        let parts = path.split(separator: "/")
        return parts.count == 4 && parts[2] == "events" && parts[3].hasPrefix("recording-") && parts[3].hasSuffix(".json")
    }

    /// Regular files under `root`, relative to it, at most 5 levels deep.
    private static func relativeFiles(under root: URL) -> [String] {
        guard let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]) else { return [] }
        var files: [String] = []
        let base = root.standardizedFileURL.path + "/"
        for case let url as URL in enumerator {
            if enumerator.level > 5 { enumerator.skipDescendants(); continue }
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else { continue }
            let path = url.standardizedFileURL.path
            if path.hasPrefix(base) { files.append(String(path.dropFirst(base.count))) }
        }
        return files
    }

    /// `s3://bucket/prefix`: the endpoint from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (else
    /// AWS's), credentials and region from the usual AWS_* variables.
    private static func download(_ argument: String, logger: Logger) throws -> StageInput {
        let environment = ProcessInfo.processInfo.environment
        let rest = argument.dropFirst("s3://".count)
        let bucket = String(rest.prefix { $0 != "/" })
        let prefix = rest.dropFirst(bucket.count).split(separator: "/").joined(separator: "/")
        guard !bucket.isEmpty else { throw CLIFailure("--stage: '\(argument)' is not s3://bucket/prefix") }
        guard let accessKeyId = environment["AWS_ACCESS_KEY_ID"], let secret = environment["AWS_SECRET_ACCESS_KEY"] else {
            throw CLIFailure("--stage \(argument) needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment")
        }
        let region = environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"] ?? "us-east-1"
        let endpointText = environment["AWS_ENDPOINT_URL_S3"] ?? environment["AWS_ENDPOINT_URL"] ?? "https://s3.\(region).amazonaws.com"
        guard let endpoint = URL(string: endpointText), endpoint.scheme == "http" || endpoint.scheme == "https" else {
            throw CLIFailure("endpoint '\(endpointText)' is not an http(s) URL")
        }
        let configuration = S3StorageConfiguration(endpoint: endpoint, bucket: bucket, region: region, accessKeyId: accessKeyId,
                                                   secretAccessKey: secret, sessionToken: environment["AWS_SESSION_TOKEN"])
        let temporary = FileManager.default.temporaryDirectory.appendingPathComponent("stage-compositor-\(UUID().uuidString)")
        let destination = temporary.appendingPathComponent(prefix.split(separator: "/").last.map(String.init) ?? bucket)
        let httpClient = HTTPClient(eventLoopGroupProvider: .singleton)
        defer { try? httpClient.syncShutdown() }
        let storage = S3Storage(configuration: configuration, httpClient: httpClient, logger: logger)
        let local = LocalDirectoryStorage(rootPath: destination.path)
        let count: Int
        do {
            count = try blocking {
                let listPrefix = prefix.isEmpty ? "" : prefix + "/"
                let keys = try await storage.list(prefix: listPrefix).filter { key in
                    let relative = key.dropFirst(listPrefix.count)
                    return relative.contains("/events/recording-") || relative.contains("/media/hls/")
                }
                for key in keys {
                    let data = try await storage.get(key: key)
                    try await local.put(data, key: String(key.dropFirst(listPrefix.count)), contentType: nil)
                }
                return keys.count
            }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw CLIFailure("--stage \(argument): \(error)")
        }
        do {
            var input = try fromRecordings(directory: destination, source: argument, temporaryDirectory: temporary)
            input = StageInput(stage: input.stage, summary: ["downloaded \(count) objects from \(argument)"] + input.summary,
                               temporaryDirectory: temporary)
            return input
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
    }
}

/// Runs async work from a synchronous command and waits for it.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        do { let value = try await body(); result.withLock { $0 = .success(value) } } catch { result.withLock { $0 = .failure(error) } }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}
