// The one error type of the Layout module: invalid configurations (botocore ivs-realtime
// limits) and preset resolution. Messages name the field or file at fault.

public enum LayoutValidationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A field breaks a limit of the API model; `field` is a dotted path (`layout.pip.pipWidth`).
    case invalidField(field: String, reason: String)
    /// A preset name that is not in any search directory.
    case unknownPreset(name: String, available: [String], searchedDirectories: [String])
    /// A preset file that cannot be read.
    case unreadableFile(path: String, reason: String)
    /// A preset file that is not a valid LayoutConfiguration; `field` is nil for a JSON
    /// syntax error.
    case malformedPreset(path: String, field: String?, reason: String)

    public var description: String {
        switch self {
        case .invalidField(let field, let reason):
            return "\(field): \(reason)"
        case .unknownPreset(let name, let available, let directories):
            let names = available.isEmpty ? "none found" : available.joined(separator: ", ")
            let searched = directories.isEmpty ? "no search directories" : directories.joined(separator: ", ")
            return "unknown layout preset '\(name)' (available: \(names); searched: \(searched))"
        case .unreadableFile(let path, let reason):
            return "\(path): cannot read layout preset: \(reason)"
        case .malformedPreset(let path, let field, let reason):
            if let field { return "\(path): \(field): \(reason)" }
            return "\(path): \(reason)"
        }
    }
}

/// botocore `AttributeKey`: 0...128 characters of `[a-zA-Z0-9-_]`.
public enum AttributeKey {
    public static let maximumLength = 128

    public static func isValid(_ key: String) -> Bool {
        key.utf8.count <= maximumLength && key.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x5F
        }
    }
}

/// Participant attributes (IVS's ParticipantTokenAttributes): keys and values together at
/// most 1 KB of UTF-8 — a token's, UpdateParticipant's, a manifest direction's.
public enum ParticipantAttributes {
    public static let maximumBytes = 1024

    public static func byteCount(_ attributes: [String: String]) -> Int {
        attributes.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
    }
}

// The one place layouts are validated: StartComposition (through APIModels), `compose
// --layout` and the layout presets all get these checks and this wording.

extension LayoutConfiguration {
    /// Checks the limits of the IVS API model. `prefix` is the path of this configuration in
    /// its request (`layout` in StartComposition).
    public func validate(prefix: String = "layout") throws(LayoutValidationError) {
        if grid != nil, pip != nil {
            throw .invalidField(field: prefix, reason: "specify either grid or pip, not both")
        }
        if let grid { try grid.validate(prefix: "\(prefix).grid") }
        if let pip { try pip.validate(prefix: "\(prefix).pip") }
        try Self.validateTransition(transitionMs, field: "\(prefix).transitionMs")
    }

    /// A transition's length: 0...`maximumTransitionMs` milliseconds.
    public static func validateTransition(_ value: Int?, field: String) throws(LayoutValidationError) {
        guard let value else { return }
        if value < 0 || value > maximumTransitionMs {
            throw .invalidField(field: field, reason: "must be between 0 and \(maximumTransitionMs) (got \(value))")
        }
    }
}

extension GridConfiguration {
    public func validate(prefix: String = "layout.grid") throws(LayoutValidationError) {
        try validateAttributeKey(featuredParticipantAttribute, field: "\(prefix).featuredParticipantAttribute")
        try validateAttributeKey(participantOrderAttribute, field: "\(prefix).participantOrderAttribute")
        try validateMinimum(gridGap, 0, field: "\(prefix).gridGap")
        try validateActiveSpeaker(activeSpeakerHoldMs, activeSpeakerMinSpeechMs, prefix: prefix)
    }
}

extension PipConfiguration {
    public func validate(prefix: String = "layout.pip") throws(LayoutValidationError) {
        try validateAttributeKey(featuredParticipantAttribute, field: "\(prefix).featuredParticipantAttribute")
        try validateAttributeKey(participantOrderAttribute, field: "\(prefix).participantOrderAttribute")
        try validateAttributeKey(pipParticipantAttribute, field: "\(prefix).pipParticipantAttribute")
        try validateMinimum(gridGap, 0, field: "\(prefix).gridGap")
        try validateMinimum(pipOffset, 0, field: "\(prefix).pipOffset")
        try validateMinimum(pipWidth, 1, field: "\(prefix).pipWidth")
        try validateMinimum(pipHeight, 1, field: "\(prefix).pipHeight")
        try validateActiveSpeaker(activeSpeakerHoldMs, activeSpeakerMinSpeechMs, prefix: prefix)
    }
}

/// The active speaker's hold and shortest speech: 0...60000 ms.
private func validateActiveSpeaker(_ hold: Int?, _ minimum: Int?, prefix: String) throws(LayoutValidationError) {
    for (value, name) in [(hold, "activeSpeakerHoldMs"), (minimum, "activeSpeakerMinSpeechMs")] {
        if let value, value < 0 || value > 60_000 {
            throw .invalidField(field: "\(prefix).\(name)", reason: "must be between 0 and 60000 (got \(value))")
        }
    }
}

func validateAttributeKey(_ key: String?, field: String) throws(LayoutValidationError) {
    guard let key else { return }
    let count = key.unicodeScalars.count
    if count > AttributeKey.maximumLength {
        throw .invalidField(field: field, reason: "length must be between 0 and \(AttributeKey.maximumLength) characters (got \(count))")
    }
    if !AttributeKey.isValid(key) {
        // Quoted, cut short so that a huge value cannot flood a log line.
        let scalars = key.unicodeScalars
        let shown = scalars.count > 160 ? String(String.UnicodeScalarView(scalars.prefix(160))) + "..." : key
        throw .invalidField(field: field, reason: "'\(shown)' must match [a-zA-Z0-9-_]*")
    }
}

private func validateMinimum(_ value: Int?, _ minimum: Int, field: String) throws(LayoutValidationError) {
    if let value, value < minimum {
        throw .invalidField(field: field, reason: "must be at least \(minimum) (got \(value))")
    }
}
