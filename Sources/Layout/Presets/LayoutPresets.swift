// Layout presets: LayoutConfiguration JSON files (`{"grid":{...}}` / `{"pip":{...}}`) that
// users pass by name (`grid-featured`) or by path. The only file reading in this module.

import Foundation

public enum LayoutPresets {
    /// Resolves `nameOrPath` to a validated configuration. A value containing "/" or ending
    /// in ".json" is a path, read directly; anything else is a name looked up as
    /// `NAME.json` in `searchDirectories`, first match wins.
    public static func resolve(_ nameOrPath: String, searchDirectories: [String]) throws(LayoutValidationError) -> LayoutConfiguration {
        if nameOrPath.contains("/") || nameOrPath.hasSuffix(".json") {
            return try load(path: nameOrPath)
        }
        for directory in searchDirectories {
            let path = (directory as NSString).appendingPathComponent("\(nameOrPath).json")
            if FileManager.default.isReadableFile(atPath: path) {
                return try load(path: path)
            }
        }
        throw .unknownPreset(name: nameOrPath, available: availableNames(in: searchDirectories),
                             searchedDirectories: searchDirectories)
    }

    /// Preset names (file names without `.json`) found in the directories, sorted, unique.
    public static func availableNames(in searchDirectories: [String]) -> [String] {
        var names = Set<String>()
        for directory in searchDirectories {
            let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            for file in files where file.hasSuffix(".json") {
                names.insert(String(file.dropLast(".json".count)))
            }
        }
        return names.sorted()
    }

    /// Reads, decodes and validates one preset file.
    public static func load(path: String) throws(LayoutValidationError) -> LayoutConfiguration {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw .unreadableFile(path: path, reason: FileManager.default.fileExists(atPath: path)
                                  ? "\(error.localizedDescription)" : "no such file")
        }
        return try decode(data, path: path)
    }

    /// Decodes and validates preset JSON; `path` only names the source in errors.
    /// Unknown fields are rejected (a misspelt `gridgap` would otherwise be silently ignored).
    static func decode(_ data: Data, path: String) throws(LayoutValidationError) -> LayoutConfiguration {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw .malformedPreset(path: path, field: nil, reason: "not valid JSON")
        }
        try checkKnownFields(object, path: path)
        let configuration: LayoutConfiguration
        do {
            configuration = try JSONDecoder().decode(LayoutConfiguration.self, from: data)
        } catch let error as DecodingError {
            throw describe(error, path: path)
        } catch {
            throw .malformedPreset(path: path, field: nil, reason: "\(error)")
        }
        do {
            try configuration.validate()
        } catch {
            if case .invalidField(let field, let reason) = error {
                throw .malformedPreset(path: path, field: field, reason: reason)
            }
            throw error
        }
        return configuration
    }

    /// Where preset names are looked up, in order, keeping only existing directories:
    /// `$STAGE_COMPOSITOR_LAYOUTS` (colon-separated), `./layouts`, the executable's
    /// `../share/stage-compositor/layouts`, and the `layouts/` next to the nearest
    /// `Package.swift` above the executable (dev builds run from `.build/debug/`).
    public static func defaultSearchDirectories() -> [String] {
        defaultSearchDirectories(
            environment: ProcessInfo.processInfo.environment,
            currentDirectory: FileManager.default.currentDirectoryPath,
            executablePath: Bundle.main.executablePath)
    }

    /// `defaultSearchDirectories()` with its inputs spelled out (for tests).
    public static func defaultSearchDirectories(environment: [String: String], currentDirectory: String,
                                                executablePath: String?) -> [String] {
        var candidates: [String] = []
        if let configured = environment["STAGE_COMPOSITOR_LAYOUTS"] {
            candidates += configured.split(separator: ":").map(String.init)
        }
        candidates.append((currentDirectory as NSString).appendingPathComponent("layouts"))
        if let executablePath {
            let executableDirectory = URL(fileURLWithPath: executablePath).resolvingSymlinksInPath()
                .deletingLastPathComponent()
            candidates.append(executableDirectory.appendingPathComponent("../share/stage-compositor/layouts")
                .standardizedFileURL.path)
            var directory = executableDirectory
            while directory.path != "/" && !directory.path.isEmpty {
                let manifest = directory.appendingPathComponent("Package.swift").path
                let layouts = directory.appendingPathComponent("layouts").path
                if FileManager.default.fileExists(atPath: manifest), isDirectory(layouts) {
                    candidates.append(layouts)
                    break
                }
                directory = directory.deletingLastPathComponent()
            }
        }
        var seen = Set<String>()
        return candidates.filter { isDirectory($0) && seen.insert(($0 as NSString).standardizingPath).inserted }
    }

    private static func isDirectory(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    private static let knownFields: [String: Set<String>] = [
        "grid": ["featuredParticipantAttribute", "omitStoppedVideo", "videoAspectRatio", "videoFillMode",
                 "gridGap", "participantOrderAttribute"],
        "pip": ["featuredParticipantAttribute", "omitStoppedVideo", "videoFillMode", "gridGap",
                "pipParticipantAttribute", "pipBehavior", "pipOffset", "pipPosition", "pipWidth", "pipHeight",
                "participantOrderAttribute"],
    ]

    private static let enumValues: [String: [String]] = [
        "videoAspectRatio": VideoAspectRatio.allCases.map(\.rawValue),
        "videoFillMode": VideoFillMode.allCases.map(\.rawValue),
        "pipBehavior": PipBehavior.allCases.map(\.rawValue),
        "pipPosition": PipPosition.allCases.map(\.rawValue),
    ]

    private static func checkKnownFields(_ object: Any, path: String) throws(LayoutValidationError) {
        guard let top = object as? [String: Any] else {
            throw .malformedPreset(path: path, field: nil, reason: "expected a JSON object like {\"grid\":{...}} or {\"pip\":{...}}")
        }
        for key in top.keys.sorted() {
            guard let fields = knownFields[key] else {
                throw .malformedPreset(path: path, field: key, reason: "unknown field (expected grid or pip)")
            }
            if top[key] is NSNull { continue }
            guard let member = top[key] as? [String: Any] else {
                throw .malformedPreset(path: path, field: key, reason: "expected an object")
            }
            if let unknown = member.keys.sorted().first(where: { !fields.contains($0) }) {
                throw .malformedPreset(path: path, field: "\(key).\(unknown)", reason: "unknown field")
            }
        }
    }

    private static func describe(_ error: DecodingError, path: String) -> LayoutValidationError {
        func field(_ codingPath: [any CodingKey]) -> String? {
            codingPath.isEmpty ? nil : codingPath.map(\.stringValue).joined(separator: ".")
        }
        switch error {
        case .typeMismatch(let type, let context):
            return .malformedPreset(path: path, field: field(context.codingPath), reason: "expected \(jsonTypeName(type))")
        case .valueNotFound(let type, let context):
            return .malformedPreset(path: path, field: field(context.codingPath), reason: "expected \(jsonTypeName(type)), found null")
        case .keyNotFound(let key, let context):
            return .malformedPreset(path: path, field: field(context.codingPath + [key]), reason: "missing")
        case .dataCorrupted(let context):
            if let key = context.codingPath.last?.stringValue, let allowed = enumValues[key] {
                return .malformedPreset(path: path, field: field(context.codingPath),
                                        reason: "must be one of \(allowed.joined(separator: ", "))")
            }
            return .malformedPreset(path: path, field: field(context.codingPath), reason: context.debugDescription)
        @unknown default:
            return .malformedPreset(path: path, field: nil, reason: "\(error)")
        }
    }

    private static func jsonTypeName(_ type: Any.Type) -> String {
        switch type {
        case is Int.Type: "an integer"
        case is Bool.Type: "a boolean"
        case is String.Type: "a string"
        default: "\(type)"
        }
    }
}
