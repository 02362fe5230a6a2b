/// Semantic checks on a decoded manifest (the decoder has already checked types).
enum StageManifestValidator {
    static let stageArnPattern = #"^arn:aws:ivs:[a-z0-9-]+:[0-9]+:stage/[a-zA-Z0-9-]+$"#

    static func validate(_ manifest: StageManifest, file: String) throws(StageError) {
        if manifest.stageArn.wholeMatch(of: try! Regex(stageArnPattern)) == nil {
            throw StageError(file: file, field: "stageArn", message: "'\(manifest.stageArn)' is not a stage ARN (arn:aws:ivs:REGION:ACCOUNT:stage/ID)")
        }
        if let duration = manifest.durationMs, duration <= 0 {
            throw StageError(file: file, field: "durationMs", message: "must be greater than 0")
        }
        var seen = Set<String>()
        for (index, participant) in manifest.participants.enumerated() {
            let prefix = "participants[\(index)]"
            if participant.participantId.isEmpty {
                throw StageError(file: file, field: "\(prefix).participantId", message: "must not be empty")
            }
            if !seen.insert(participant.participantId).inserted {
                throw StageError(file: file, field: "\(prefix).participantId", message: "duplicate participantId '\(participant.participantId)'")
            }
            var previous: Int64 = 0
            for (eventIndex, event) in participant.timeline.enumerated() {
                let field = "\(prefix).timeline[\(eventIndex)].atMs"
                if event.atMs < 0 { throw StageError(file: file, field: field, message: "must be >= 0") }
                if event.atMs < previous { throw StageError(file: file, field: field, message: "events must be in time order") }
                previous = event.atMs
            }
        }
    }
}
