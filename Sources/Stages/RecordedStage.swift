// Loading a recorded stage directory: parse and validate `manifest.json`, resolve media paths.
public import Foundation

/// A failure to load a recorded stage. Every case names the file, and the field where one
/// is at fault, so the CLI can print it as is.
public struct StageError: Error, Equatable, Sendable, CustomStringConvertible {
    public var file: String
    public var field: String?
    public var message: String

    public init(file: String, field: String? = nil, message: String) {
        self.file = file
        self.field = field
        self.message = message
    }

    public var description: String {
        if let field { return "\(file): \(field): \(message)" }
        return "\(file): \(message)"
    }
}

public struct RecordedStage: Sendable {
    public static let manifestName = "manifest.json"

    public let directory: URL
    public let manifest: StageManifest

    public init(directory: URL, manifest: StageManifest) {
        self.directory = directory
        self.manifest = manifest
    }

    /// Absolute path of a participant's media file, if it has one.
    public func mediaPath(for participant: StageParticipantManifest) -> String? {
        participant.media.map(path(of:))
    }

    /// Absolute path of a media path relative to the stage directory.
    public func path(of media: String) -> String {
        directory.appendingPathComponent(media).standardizedFileURL.path
    }

    /// Reads and validates `DIR/manifest.json`; checks each media file exists and is readable.
    public static func load(from directoryPath: String) throws(StageError) -> RecordedStage {
        let directory = URL(fileURLWithPath: directoryPath, isDirectory: true).standardizedFileURL
        let manifestURL = directory.appendingPathComponent(manifestName)
        let file = manifestURL.path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw StageError(file: directory.path, message: "stage directory does not exist")
        }
        let data: Data
        do {
            data = try Data(contentsOf: manifestURL)
        } catch {
            throw StageError(file: file, message: "cannot read manifest (\(FileManager.default.fileExists(atPath: file) ? "unreadable" : "missing"))")
        }
        let manifest: StageManifest
        do {
            manifest = try JSONDecoder().decode(StageManifest.self, from: data)
        } catch let error as DecodingError {
            throw StageError(file: file, field: error.fieldPath, message: error.summary)
        } catch {
            throw StageError(file: file, message: "malformed JSON: \(error)")
        }
        return try validated(manifest, directory: directory, file: file)
    }

    /// A stage from a manifest made elsewhere (a session's individual recordings): the same
    /// checks as a loaded one; `file` names the manifest's origin in errors.
    public static func validated(_ manifest: StageManifest, directory: URL, file: String) throws(StageError) -> RecordedStage {
        try StageManifestValidator.validate(manifest, file: file)
        let stage = RecordedStage(directory: directory, manifest: manifest)
        for (index, participant) in manifest.participants.enumerated() {
            for (partIndex, part) in participant.mediaFiles.enumerated() {
                let field = participant.media != nil ? "participants[\(index)].media" : "participants[\(index)].mediaParts[\(partIndex)].media"
                try checkReadable(stage.path(of: part.media), file: file, field: field)
            }
        }
        return stage
    }

    private static func checkReadable(_ path: String, file: String, field: String) throws(StageError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw StageError(file: file, field: field, message: "media file \(path) does not exist")
        }
        guard !isDirectory.boolValue else {
            throw StageError(file: file, field: field, message: "media path \(path) is a directory, not a file")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw StageError(file: file, field: field, message: "media file \(path) is not readable")
        }
    }
}

extension DecodingError {
    var fieldPath: String? {
        let path: [any CodingKey]
        switch self {
        case .keyNotFound(let key, let context): path = context.codingPath + [key]
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            path = context.codingPath
        @unknown default: return nil
        }
        guard !path.isEmpty else { return nil }
        var text = ""
        for key in path {
            if let index = key.intValue { text += "[\(index)]" } else { text += text.isEmpty ? key.stringValue : ".\(key.stringValue)" }
        }
        return text
    }

    var summary: String {
        switch self {
        case .keyNotFound: return "required field is missing"
        case .typeMismatch(let type, _): return "expected \(type)"
        case .valueNotFound(let type, _): return "expected \(type), found null"
        case .dataCorrupted(let context): return context.debugDescription
        @unknown default: return "invalid"
        }
    }
}
