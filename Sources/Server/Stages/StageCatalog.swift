// Stages the daemon knows: those defined in the configuration file (read-only) and those
// registered through CreateStage (persisted). Each maps to a recorded stage directory.
public import APIModels
public import Persistence
import Foundation

public struct ResolvedStage: Sendable, Equatable {
    public var stage: Stage
    /// Recorded stage directory; nil for a created stage without a source.
    public var sourcePath: String?
    /// Defined in the configuration file (cannot be deleted or re-tagged through the API).
    public var isConfigured: Bool
}

public struct StageCatalog<Store: CompositionStore>: Sendable {
    /// The CreateStage tag that points a stage at a recorded stage directory.
    public static var sourceTag: String { "stage-compositor:source" }

    let configuration: ServerConfiguration
    let store: Store

    public init(configuration: ServerConfiguration, store: Store) {
        self.configuration = configuration
        self.store = store
    }

    public var configured: [ResolvedStage] {
        configuration.stages.compactMap { entry in
            guard let arn = configuration.stageArn(for: entry) else { return nil }
            return ResolvedStage(stage: Stage(arn: arn, name: entry.name ?? "", tags: [:]), sourcePath: entry.source,
                                 isConfigured: true)
        }
    }

    public func stage(arn: String) async throws(APIError) -> ResolvedStage? {
        if let found = configured.first(where: { $0.stage.arn == arn }) { return found }
        let stored: StoredStage?
        do { stored = try await store.stage(arn: arn) } catch { throw .internalServer("stage store: \(error.message)") }
        return stored.map { ResolvedStage(stage: $0.stage, sourcePath: $0.sourcePath.isEmpty ? nil : $0.sourcePath, isConfigured: false) }
    }

    /// The stages after `after` by ARN in byte order, the configuration file's among the
    /// store's: a page of the store's (at most `limit`) with the configured ones that sort
    /// before its end. `nextKey` is the store's: what sorts after it comes in a later page.
    public func page(after: String?, limit: Int) async throws(APIError) -> KeysetPage<ResolvedStage> {
        let stored: KeysetPage<StoredStage>
        do { stored = try await store.stages(after: after, limit: limit) } catch {
            throw .internalServer("stage store: \(error.message)")
        }
        let configured = configured
        let configuredArns = Set(configured.map(\.stage.arn))
        func inPage(_ arn: String) -> Bool {
            (after.map { $0.utf8.lexicographicallyPrecedes(arn.utf8) } ?? true)
                && (stored.nextKey.map { !$0.utf8.lexicographicallyPrecedes(arn.utf8) } ?? true)
        }
        let rows = configured.filter { inPage($0.stage.arn) } + stored.items.compactMap { value -> ResolvedStage? in
            // A configured stage shadows a stored one with its ARN, as `stage(arn:)` does.
            guard !configuredArns.contains(value.stage.arn) else { return nil }
            return ResolvedStage(stage: value.stage, sourcePath: value.sourcePath.isEmpty ? nil : value.sourcePath, isConfigured: false)
        }
        return KeysetPage(items: rows.sorted { $0.stage.arn.utf8.lexicographicallyPrecedes($1.stage.arn.utf8) },
                          nextKey: stored.nextKey)
    }

    /// Checks a `stage-compositor:source` value: an absolute path (after resolving symlinks
    /// and `..`) inside one of `stageSourceRoots`, holding a manifest.json. Returns the
    /// resolved path.
    public func validateSourcePath(_ value: String) throws(APIError) -> String {
        let field = "tags.\(Self.sourceTag)"
        guard value.hasPrefix("/"), !value.contains("\0") else {
            throw .validation("\(field): must be an absolute path to a recorded stage directory")
        }
        let resolved = URL(fileURLWithPath: value).standardizedFileURL.resolvingSymlinksInPath().path
        let roots = configuration.stageSourceRoots.map {
            URL(fileURLWithPath: $0).standardizedFileURL.resolvingSymlinksInPath().path
        }
        guard roots.contains(where: { resolved == $0 || resolved.hasPrefix($0 + "/") }) else {
            throw .validation("\(field): \(value) is outside the configured stage source roots")
        }
        guard FileManager.default.fileExists(atPath: resolved + "/manifest.json") else {
            throw .validation("\(field): \(value) is not a recorded stage directory (no manifest.json)")
        }
        return resolved
    }
}
