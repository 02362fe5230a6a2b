// Request validation after the model's constraints (min/max, patterns, list sizes) and
// the documented rules the model only states in prose (even dimensions, pixel budget,
// one channel + one s3 destination). The first violation wins, in field order, and its
// message starts with the field's path: `destinations[0].s3.encoderConfigurationArns: ...`.
public import Layout
import MediaCore

/// Options that reach beyond the model's own constraints.
public struct ValidationOptions: Sendable {
    /// Extra layout checks beyond the model's (which the Layout module's
    /// `LayoutConfiguration.validate()` makes): returns nil when the layout is usable, else a
    /// message whose path is relative to `layout` (e.g. "pip.pipWidth: ...").
    public var layoutCheck: (@Sendable (LayoutConfiguration) -> String?)?

    public init(layoutCheck: (@Sendable (LayoutConfiguration) -> String?)? = nil) {
        self.layoutCheck = layoutCheck
    }
}

/// A request the control plane accepts: its operation and its model constraints.
public protocol APIRequest: Sendable {
    static var operation: APIOperation { get }
    func validate(options: ValidationOptions) throws(APIError)
}

extension APIRequest {
    public func validate() throws(APIError) { try validate(options: ValidationOptions()) }
}

/// The model's limits, named once.
public enum ModelLimits {
    public static let maximumDestinations = 2
    public static let maximumTags = 50
    public static let tagKeyLength = 1...128
    public static let tagValueLength = 0...256
    public static let nameLength = 0...128
    public static let idempotencyTokenLength = 1...64
    public static let dimension = 2...1920
    public static let maximumPixels = 2_073_600
    public static let framerate: ClosedRange<Float> = 1...60
    public static let bitrate = 1...8_500_000
    public static let targetSegmentDurationSeconds = 2...10
    public static let thumbnailIntervalSeconds = 1...86_400
    public static let maxResults = 1...100
    public static let paginationTokenLength = 0...1024
    public static let bucketNameLength = 3...63
    public static let participantTokenConfigurations = 0...12
    public static let participantTokenDurationMinutes = 1...20_160
    public static let participantRecordingReconnectWindowSeconds = 0...300
    /// StartParticipantReplication.reconnectWindowSeconds (the model's ReconnectWindowSeconds).
    public static let replicationReconnectWindowSeconds = 0...300
    /// Extension: participants named in one `audio` map (a stage holds far fewer).
    public static let audioSettings = 0...100
}

/// Single-field rules; each throws a ValidationException naming `path`.
enum Rule {
    static func fail(_ path: String, _ problem: String) -> APIError { .validation("\(path): \(problem)") }

    /// Quotes user input in messages, cut short so a huge value cannot flood a log line.
    static func quoted(_ value: String) -> String {
        let scalars = value.unicodeScalars
        let text = scalars.count > 160 ? String(String.UnicodeScalarView(scalars.prefix(160))) + "..." : value
        return "'" + text + "'"
    }

    static func arn(_ value: String, _ type: IVSResourceType, at path: String) throws(APIError) {
        guard IVSARN(parsing: value, expecting: type) != nil else {
            throw fail(path, "\(quoted(value)) is not a valid \(type.rawValue) ARN "
                + "(expected arn:aws:ivs:<region>:<account-id>:\(type.rawValue)/<id>, at most 128 characters)")
        }
    }

    /// Any IVS resource ARN. (The model's ResourceArn pattern has `[a-z-]/`, one character
    /// for the resource type, which no real ARN matches; we accept the known types.)
    static func resourceArn(_ value: String, at path: String) throws(APIError) {
        guard IVSARN(parsing: value) != nil else {
            throw fail(path, "\(quoted(value)) is not a valid IVS resource ARN "
                + "(expected arn:aws:ivs:<region>:<account-id>:<resource-type>/<id>, at most 128 characters)")
        }
    }

    static func length(_ value: String, _ range: ClosedRange<Int>, at path: String) throws(APIError) {
        let count = value.unicodeScalars.count
        guard range.contains(count) else {
            throw fail(path, "length must be between \(range.lowerBound) and \(range.upperBound) characters (got \(count))")
        }
    }

    /// `[a-zA-Z0-9-_]*`, 0...128: resource names, destination names, attribute keys.
    static func name(_ value: String?, at path: String, length range: ClosedRange<Int> = ModelLimits.nameLength) throws(APIError) {
        guard let value else { return }
        try length(value, range, at: path)
        guard value.unicodeScalars.allSatisfy(CharacterRules.isNameCharacter) else {
            throw fail(path, "\(quoted(value)) must match [a-zA-Z0-9-_]*")
        }
    }

    static func range<T: Comparable>(_ value: T?, _ range: ClosedRange<T>, at path: String) throws(APIError) {
        guard let value else { return }
        guard range.contains(value) else {
            throw fail(path, "must be between \(range.lowerBound) and \(range.upperBound) (got \(value))")
        }
    }

    static func minimum(_ value: Int?, _ minimum: Int, at path: String) throws(APIError) {
        guard let value else { return }
        guard value >= minimum else { throw fail(path, "must be at least \(minimum) (got \(value))") }
    }

    static func count<T>(_ list: [T]?, _ range: ClosedRange<Int>, at path: String) throws(APIError) {
        guard let list else { return }
        guard range.contains(list.count) else {
            let expected = range.lowerBound == range.upperBound
                ? "exactly \(range.lowerBound) item\(range.lowerBound == 1 ? "" : "s")"
                : "between \(range.lowerBound) and \(range.upperBound) items"
            throw fail(path, "must contain \(expected) (got \(list.count))")
        }
    }

    static func tags(_ tags: Tags?, at path: String = "tags") throws(APIError) {
        guard let tags else { return }
        guard tags.count <= ModelLimits.maximumTags else {
            throw fail(path, "at most \(ModelLimits.maximumTags) tags are allowed (got \(tags.count))")
        }
        for key in tags.keys.sorted() {
            try tagKey(key, at: path)
            try length(tags[key]!, ModelLimits.tagValueLength, at: "\(path).\(key)")
        }
    }

    static func tagKey(_ key: String, at path: String) throws(APIError) {
        guard ModelLimits.tagKeyLength.contains(key.unicodeScalars.count) else {
            throw fail(path, "tag key \(quoted(key)) must be 1 to 128 characters")
        }
    }

    static func maxResults(_ value: Int?) throws(APIError) {
        try range(value, ModelLimits.maxResults, at: "maxResults")
    }

    static func nextToken(_ value: String?) throws(APIError) {
        guard let value else { return }
        try length(value, ModelLimits.paginationTokenLength, at: "nextToken")
        guard value.unicodeScalars.allSatisfy(CharacterRules.isTokenCharacter) else {
            throw fail("nextToken", "must match [a-zA-Z0-9+/=_-]*")
        }
    }
}

// MARK: - Compositions

extension StartCompositionRequest: APIRequest {
    public static var operation: APIOperation { .startComposition }

    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.arn(stageArn, .stage, at: "stageArn")
        if let idempotencyToken {
            try Rule.length(idempotencyToken, ModelLimits.idempotencyTokenLength, at: "idempotencyToken")
            try Rule.name(idempotencyToken, at: "idempotencyToken", length: ModelLimits.idempotencyTokenLength)
        }
        if let layout { try layout.validateModel(options: options) }
        try Self.validateAudio(audio)
        if let overlays { try overlays.validateModel() }
        try Rule.count(destinations, 1...ModelLimits.maximumDestinations, at: "destinations")
        var channelIndex: Int?
        var s3Index: Int?
        for (index, destination) in destinations.enumerated() {
            let path = "destinations[\(index)]"
            try destination.validate(at: path)
            if destination.channel != nil {
                if let first = channelIndex {
                    throw Rule.fail(path, "only one channel destination is allowed (destinations[\(first)] is one)")
                }
                channelIndex = index
            }
            if destination.s3 != nil {
                if let first = s3Index {
                    throw Rule.fail(path, "only one s3 destination is allowed (destinations[\(first)] is one)")
                }
                s3Index = index
            }
        }
        try Rule.tags(tags)
    }
}

extension DestinationConfiguration {
    func validate(at path: String) throws(APIError) {
        try Rule.name(name, at: "\(path).name")
        switch (channel, s3) {
        case (nil, nil): throw Rule.fail(path, "either channel or s3 must be specified")
        case (.some, .some): throw Rule.fail(path, "specify either channel or s3, not both")
        case (let channel?, nil):
            try Rule.arn(channel.channelArn, .channel, at: "\(path).channel.channelArn")
            if let encoder = channel.encoderConfigurationArn {
                try Rule.arn(encoder, .encoderConfiguration, at: "\(path).channel.encoderConfigurationArn")
            }
        case (nil, let s3?):
            try s3.validate(at: "\(path).s3")
        }
    }
}

extension S3DestinationConfiguration {
    func validate(at path: String) throws(APIError) {
        try Rule.arn(storageConfigurationArn, .storageConfiguration, at: "\(path).storageConfigurationArn")
        try Rule.count(encoderConfigurationArns, 1...1, at: "\(path).encoderConfigurationArns")
        for (index, arn) in encoderConfigurationArns.enumerated() {
            try Rule.arn(arn, .encoderConfiguration, at: "\(path).encoderConfigurationArns[\(index)]")
        }
        try Rule.range(recordingConfiguration?.hlsConfiguration?.targetSegmentDurationSeconds,
                       ModelLimits.targetSegmentDurationSeconds,
                       at: "\(path).recordingConfiguration.hlsConfiguration.targetSegmentDurationSeconds")
        try Rule.count(thumbnailConfigurations, 0...1, at: "\(path).thumbnailConfigurations")
        for (index, thumbnail) in (thumbnailConfigurations ?? []).enumerated() {
            let thumbnailPath = "\(path).thumbnailConfigurations[\(index)]"
            try Rule.range(thumbnail.targetIntervalSeconds, ModelLimits.thumbnailIntervalSeconds,
                           at: "\(thumbnailPath).targetIntervalSeconds")
            try Rule.count(thumbnail.storage, 0...2, at: "\(thumbnailPath).storage")
        }
    }
}

extension LayoutConfiguration {
    /// The model's constraints on the layout (the Layout module's checks, the one place they
    /// live), then the optional deeper check.
    func validateModel(options: ValidationOptions) throws(APIError) {
        do throws(LayoutValidationError) {
            try validate(prefix: "layout")
        } catch {
            throw .validation(error.description)
        }
        if let check = options.layoutCheck, let problem = check(self) {
            throw .validation("layout.\(problem)")
        }
    }
}

extension OverlayConfiguration {
    /// The `overlays` extension field's shape (the Layout module's checks, the one place they
    /// live). Its files and fonts are checked where they are loaded, by the daemon.
    func validateModel() throws(APIError) {
        do throws(LayoutValidationError) {
            try validate(prefix: "overlays")
        } catch {
            throw .validation(error.description)
        }
    }
}

extension StartCompositionRequest {
    /// The `audio` extension field's rules (StartComposition and UpdateComposition).
    static func validateAudio(_ audio: [String: ParticipantAudio]?) throws(APIError) {
        guard let audio else { return }
        try Rule.count(Array(audio.keys), ModelLimits.audioSettings, at: "audio")
        for id in audio.keys.sorted() {
            try Rule.participantId(id, at: "audio.\(Rule.quoted(id))")
            if let problem = audio[id]?.gainProblem { throw Rule.fail("audio.\(id).gain", problem) }
        }
    }
}

extension UpdateCompositionRequest: APIRequest {
    public static var operation: APIOperation { .updateComposition }

    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.arn(arn, .composition, at: "arn")
        if let layout { try layout.validateModel(options: options) }
        do throws(LayoutValidationError) {
            try LayoutConfiguration.validateTransition(transitionMs, field: "transitionMs")
        } catch {
            throw .validation(error.description)
        }
        if transitionMs != nil, layout == nil { throw Rule.fail("transitionMs", "applies to a layout: give one") }
        try StartCompositionRequest.validateAudio(audio)
        if let overlays { try overlays.validateModel() }
        if layout == nil, audio == nil, overlays == nil {
            throw Rule.fail("layout", "give a layout, audio settings or overlays to change")
        }
    }
}

extension UpdateParticipantRequest: APIRequest {
    public static var operation: APIOperation { .updateParticipant }

    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.arn(stageArn, .stage, at: "stageArn")
        try Rule.participantId(participantId)
        try Rule.attributes(attributes)
    }
}

extension StopCompositionRequest: APIRequest {
    public static var operation: APIOperation { .stopComposition }
    public func validate(options: ValidationOptions) throws(APIError) { try Rule.arn(arn, .composition, at: "arn") }
}

extension GetCompositionRequest: APIRequest {
    public static var operation: APIOperation { .getComposition }
    public func validate(options: ValidationOptions) throws(APIError) { try Rule.arn(arn, .composition, at: "arn") }
}

extension ListCompositionsRequest: APIRequest {
    public static var operation: APIOperation { .listCompositions }
    public func validate(options: ValidationOptions) throws(APIError) {
        if let filterByStageArn { try Rule.arn(filterByStageArn, .stage, at: "filterByStageArn") }
        if let filterByEncoderConfigurationArn {
            try Rule.arn(filterByEncoderConfigurationArn, .encoderConfiguration, at: "filterByEncoderConfigurationArn")
        }
        try Rule.nextToken(nextToken)
        try Rule.maxResults(maxResults)
    }
}

// MARK: - Encoder configurations

extension Video {
    func validate(at path: String) throws(APIError) {
        for (value, field) in [(width, "width"), (height, "height")] {
            guard let value else { continue }
            try Rule.range(value, ModelLimits.dimension, at: "\(path).\(field)")
            guard value % 2 == 0 else { throw Rule.fail("\(path).\(field)", "must be an even number (got \(value))") }
        }
        let resolved = withDefaults()
        let pixels = resolved.width! * resolved.height!
        guard pixels <= ModelLimits.maximumPixels else {
            throw Rule.fail(path, "width x height must be at most \(ModelLimits.maximumPixels) pixels "
                + "(1920x1080 or 1080x1920); got \(resolved.width!)x\(resolved.height!) = \(pixels)")
        }
        if let framerate {
            guard framerate.isFinite else { throw Rule.fail("\(path).framerate", "must be a finite number") }
            try Rule.range(framerate, ModelLimits.framerate, at: "\(path).framerate")
        }
        try Rule.range(bitrate, ModelLimits.bitrate, at: "\(path).bitrate")
    }
}

extension CreateEncoderConfigurationRequest: APIRequest {
    public static var operation: APIOperation { .createEncoderConfiguration }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.name(name, at: "name")
        try video?.validate(at: "video")
        try Rule.tags(tags)
    }
}

extension GetEncoderConfigurationRequest: APIRequest {
    public static var operation: APIOperation { .getEncoderConfiguration }
    public func validate(options: ValidationOptions) throws(APIError) { try Rule.arn(arn, .encoderConfiguration, at: "arn") }
}

extension DeleteEncoderConfigurationRequest: APIRequest {
    public static var operation: APIOperation { .deleteEncoderConfiguration }
    public func validate(options: ValidationOptions) throws(APIError) { try Rule.arn(arn, .encoderConfiguration, at: "arn") }
}

extension ListEncoderConfigurationsRequest: APIRequest {
    public static var operation: APIOperation { .listEncoderConfigurations }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.nextToken(nextToken)
        try Rule.maxResults(maxResults)
    }
}

// MARK: - Storage configurations

extension CreateStorageConfigurationRequest: APIRequest {
    public static var operation: APIOperation { .createStorageConfiguration }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.name(name, at: "name")
        try Rule.length(s3.bucketName, ModelLimits.bucketNameLength, at: "s3.bucketName")
        guard s3.bucketName.unicodeScalars.allSatisfy(CharacterRules.isBucketCharacter) else {
            throw Rule.fail("s3.bucketName", "\(Rule.quoted(s3.bucketName)) must match [a-z0-9-.]+")
        }
        try Rule.tags(tags)
    }
}

extension GetStorageConfigurationRequest: APIRequest {
    public static var operation: APIOperation { .getStorageConfiguration }
    public func validate(options: ValidationOptions) throws(APIError) { try Rule.arn(arn, .storageConfiguration, at: "arn") }
}

extension DeleteStorageConfigurationRequest: APIRequest {
    public static var operation: APIOperation { .deleteStorageConfiguration }
    public func validate(options: ValidationOptions) throws(APIError) { try Rule.arn(arn, .storageConfiguration, at: "arn") }
}

extension ListStorageConfigurationsRequest: APIRequest {
    public static var operation: APIOperation { .listStorageConfigurations }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.nextToken(nextToken)
        try Rule.maxResults(maxResults)
    }
}

// MARK: - Stages

extension CreateStageRequest: APIRequest {
    public static var operation: APIOperation { .createStage }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.name(name, at: "name")
        try Rule.count(participantTokenConfigurations, ModelLimits.participantTokenConfigurations,
                       at: "participantTokenConfigurations")
        for (index, token) in (participantTokenConfigurations ?? []).enumerated() {
            let path = "participantTokenConfigurations[\(index)]"
            try Rule.range(token.duration, ModelLimits.participantTokenDurationMinutes, at: "\(path).duration")
            if let userId = token.userId { try Rule.length(userId, ModelLimits.userIdLength, at: "\(path).userId") }
            try Rule.attributes(token.attributes, at: "\(path).attributes")
            try Rule.count(token.capabilities, ModelLimits.participantTokenCapabilities, at: "\(path).capabilities")
        }
        try Rule.tags(tags)
        try autoParticipantRecordingConfiguration?.validate(at: "autoParticipantRecordingConfiguration")
    }
}

extension AutoParticipantRecordingConfiguration {
    func validate(at path: String) throws(APIError) {
        // "" turns individual participant recording off.
        if !storageConfigurationArn.isEmpty {
            try Rule.arn(storageConfigurationArn, .storageConfiguration, at: "\(path).storageConfigurationArn")
        }
        try Rule.count(mediaTypes, 0...1, at: "\(path).mediaTypes")
        try Rule.range(thumbnailConfiguration?.targetIntervalSeconds, ModelLimits.thumbnailIntervalSeconds,
                       at: "\(path).thumbnailConfiguration.targetIntervalSeconds")
        try Rule.count(thumbnailConfiguration?.storage, 0...2, at: "\(path).thumbnailConfiguration.storage")
        try Rule.range(recordingReconnectWindowSeconds, ModelLimits.participantRecordingReconnectWindowSeconds,
                       at: "\(path).recordingReconnectWindowSeconds")
        try Rule.range(hlsConfiguration?.targetSegmentDurationSeconds, ModelLimits.targetSegmentDurationSeconds,
                       at: "\(path).hlsConfiguration.targetSegmentDurationSeconds")
    }
}

extension GetStageRequest: APIRequest {
    public static var operation: APIOperation { .getStage }
    public func validate(options: ValidationOptions) throws(APIError) { try Rule.arn(arn, .stage, at: "arn") }
}

extension DeleteStageRequest: APIRequest {
    public static var operation: APIOperation { .deleteStage }
    public func validate(options: ValidationOptions) throws(APIError) { try Rule.arn(arn, .stage, at: "arn") }
}

extension ListStagesRequest: APIRequest {
    public static var operation: APIOperation { .listStages }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.nextToken(nextToken)
        try Rule.maxResults(maxResults)
    }
}

// MARK: - Tagging

extension TagResourceRequest: APIRequest {
    public static var operation: APIOperation { .tagResource }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.resourceArn(resourceArn, at: "resourceArn")
        try Rule.tags(tags)
    }
}

extension UntagResourceRequest: APIRequest {
    public static var operation: APIOperation { .untagResource }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.resourceArn(resourceArn, at: "resourceArn")
        try Rule.count(tagKeys, 0...ModelLimits.maximumTags, at: "tagKeys")
        for key in tagKeys { try Rule.tagKey(key, at: "tagKeys") }
    }
}

extension ListTagsForResourceRequest: APIRequest {
    public static var operation: APIOperation { .listTagsForResource }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.resourceArn(resourceArn, at: "resourceArn")
    }
}

// MARK: - Live stages: ingest configurations, sessions, participants

extension ModelLimits {
    /// UserId, DisconnectParticipantReason.
    public static let userIdLength = 0...128
    public static let reasonLength = 0...128
    /// The documented 1 KB budget of participant attributes (keys and values, UTF-8).
    public static let attributesBytes = ParticipantAttributes.maximumBytes
    public static let participantIdLength = 0...64
    public static let participantTokenCapabilities = 0...2
    /// Service quota "PublicKeys": 3 per region, not adjustable.
    public static let publicKeysPerRegion = 3
}

extension Rule {
    /// `^$|^arn:aws:ivs:...:stage/...$`: an empty string means "no stage".
    static func optionalStageArn(_ value: String?, at path: String) throws(APIError) {
        guard let value, !value.isEmpty else { return }
        try arn(value, .stage, at: path)
    }

    static func attributes(_ value: [String: String]?, at path: String = "attributes") throws(APIError) {
        guard let value else { return }
        let bytes = ParticipantAttributes.byteCount(value)
        guard bytes <= ModelLimits.attributesBytes else {
            throw fail(path, "keys and values may total at most \(ModelLimits.attributesBytes) bytes (got \(bytes))")
        }
    }

    static func sessionId(_ value: String, at path: String = "sessionId") throws(APIError) {
        guard StageSessionID.isValid(value) else {
            throw fail(path, "\(quoted(value)) is not a stage session ID (st- and 13 letters or digits)")
        }
    }

    /// `[a-zA-Z0-9-]*`, at most 64 characters.
    static func participantId(_ value: String, at path: String = "participantId", allowUnderscore: Bool = false) throws(APIError) {
        try length(value, ModelLimits.participantIdLength, at: path)
        guard value.unicodeScalars.allSatisfy({ CharacterRules.isAlphanumeric($0) || $0 == "-" || (allowUnderscore && $0 == "_") }) else {
            throw fail(path, "\(quoted(value)) must match [a-zA-Z0-9-\(allowUnderscore ? "_" : "")]*")
        }
    }
}

extension CreateIngestConfigurationRequest: APIRequest {
    public static var operation: APIOperation { .createIngestConfiguration }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.name(name, at: "name")
        try Rule.optionalStageArn(stageArn, at: "stageArn")
        if let userId { try Rule.length(userId, ModelLimits.userIdLength, at: "userId") }
        try Rule.attributes(attributes)
        if ingestProtocol == .rtmp, insecureIngest != true {
            throw Rule.fail("insecureIngest", "must be true when ingestProtocol is RTMP (plain RTMP is refused otherwise)")
        }
        try Rule.tags(tags)
    }
}

extension GetIngestConfigurationRequest: APIRequest {
    public static var operation: APIOperation { .getIngestConfiguration }
    public func validate(options: ValidationOptions) throws(APIError) { try Rule.arn(arn, .ingestConfiguration, at: "arn") }
}

extension UpdateIngestConfigurationRequest: APIRequest {
    public static var operation: APIOperation { .updateIngestConfiguration }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.arn(arn, .ingestConfiguration, at: "arn")
        try Rule.optionalStageArn(stageArn, at: "stageArn")
    }
}

extension DeleteIngestConfigurationRequest: APIRequest {
    public static var operation: APIOperation { .deleteIngestConfiguration }
    public func validate(options: ValidationOptions) throws(APIError) { try Rule.arn(arn, .ingestConfiguration, at: "arn") }
}

extension ListIngestConfigurationsRequest: APIRequest {
    public static var operation: APIOperation { .listIngestConfigurations }
    public func validate(options: ValidationOptions) throws(APIError) {
        if let filterByStageArn { try Rule.arn(filterByStageArn, .stage, at: "filterByStageArn") }
        if filterByStageArn != nil && filterByState != nil {
            throw Rule.fail("filterByState", "only one filter (filterByStageArn or filterByState) can be used at a time")
        }
        try Rule.nextToken(nextToken)
        try Rule.maxResults(maxResults)
    }
}

extension UpdateStageRequest: APIRequest {
    public static var operation: APIOperation { .updateStage }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.arn(arn, .stage, at: "arn")
        try Rule.name(name, at: "name")
        try autoParticipantRecordingConfiguration?.validate(at: "autoParticipantRecordingConfiguration")
    }
}

extension ListStageSessionsRequest: APIRequest {
    public static var operation: APIOperation { .listStageSessions }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.arn(stageArn, .stage, at: "stageArn")
        try Rule.nextToken(nextToken)
        try Rule.maxResults(maxResults)
    }
}

extension GetStageSessionRequest: APIRequest {
    public static var operation: APIOperation { .getStageSession }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.arn(stageArn, .stage, at: "stageArn")
        try Rule.sessionId(sessionId)
    }
}

extension ListParticipantsRequest: APIRequest {
    public static var operation: APIOperation { .listParticipants }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.arn(stageArn, .stage, at: "stageArn")
        try Rule.sessionId(sessionId)
        if let filterByUserId { try Rule.length(filterByUserId, ModelLimits.userIdLength, at: "filterByUserId") }
        let given = [("filterByUserId", filterByUserId != nil), ("filterByPublished", filterByPublished != nil),
                     ("filterByState", filterByState != nil), ("filterByRecordingState", filterByRecordingState != nil)]
            .filter(\.1).map(\.0)
        if given.count > 1 {
            // The message starts with the second filter given: the one that broke the rule.
            throw Rule.fail(given[1], "only one of filterByUserId, filterByPublished, filterByState or filterByRecordingState "
                + "can be provided (got \(given.joined(separator: ", ")))")
        }
        if filterByRecordingState == .disabled {
            throw Rule.fail("filterByRecordingState", "must be one of STARTING, ACTIVE, STOPPING, STOPPED, FAILED")
        }
        try Rule.nextToken(nextToken)
        try Rule.maxResults(maxResults)
    }
}

extension GetParticipantRequest: APIRequest {
    public static var operation: APIOperation { .getParticipant }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.arn(stageArn, .stage, at: "stageArn")
        try Rule.sessionId(sessionId)
        try Rule.participantId(participantId)
    }
}

extension ListParticipantEventsRequest: APIRequest {
    public static var operation: APIOperation { .listParticipantEvents }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.arn(stageArn, .stage, at: "stageArn")
        try Rule.sessionId(sessionId)
        try Rule.participantId(participantId)
        try Rule.nextToken(nextToken)
        try Rule.maxResults(maxResults)
    }
}

extension RevokeConnectionTokenRequest: APIRequest {
    public static var operation: APIOperation { .revokeConnectionToken }
    public func validate(options: ValidationOptions) throws(APIError) {
        // ConnectionTokenId: [a-zA-Z0-9-_]+, 1 to 64.
        try Rule.length(tokenId, 1...64, at: "tokenId")
        try Rule.participantId(tokenId, at: "tokenId", allowUnderscore: true)
    }
}

extension DisconnectParticipantRequest: APIRequest {
    public static var operation: APIOperation { .disconnectParticipant }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.arn(stageArn, .stage, at: "stageArn")
        // ParticipantTokenId: [a-zA-Z0-9-_]*, at most 64.
        try Rule.participantId(participantId, allowUnderscore: true)
        if let reason { try Rule.length(reason, ModelLimits.reasonLength, at: "reason") }
    }
}

// MARK: - WHIP: participant tokens and public keys

extension Rule {
    /// The model's PublicKeyMaterial pattern, which is searched for (not anchored):
    /// `-----BEGIN PUBLIC KEY-----\r?\n([a-zA-Z0-9+/=\r\n]+)\r?\n-----END PUBLIC KEY-----`.
    /// That is a BEGIN line, then at least one base64 or line-break character, then a line
    /// break right before the END marker.
    static func publicKeyMaterial(_ value: String, at path: String = "publicKeyMaterial") throws(APIError) {
        guard PEMShape.containsPublicKey(value) else {
            throw fail(path, "must contain a PEM public key (-----BEGIN PUBLIC KEY-----, base64 lines, -----END PUBLIC KEY-----)")
        }
    }
}

/// The PEM check behind `Rule.publicKeyMaterial`, on UTF-8 bytes.
enum PEMShape {
    static let begin = Array("-----BEGIN PUBLIC KEY-----".utf8)
    static let end = Array("-----END PUBLIC KEY-----".utf8)

    static func containsPublicKey(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var searchFrom = 0
        while let start = find(begin, in: bytes, from: searchFrom) {
            searchFrom = start + 1
            var index = start + begin.count
            if index < bytes.count, bytes[index] == UInt8(ascii: "\r") { index += 1 }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\n") else { continue }
            index += 1
            // The body cannot contain '-', so only the first END after it can close it.
            guard let stop = find(end, in: bytes, from: index) else { continue }
            let body = bytes[index..<stop]
            // `[...]+` then `\r?\n`: one body character at least, and the last one a line feed.
            if body.count >= 2, body.last == UInt8(ascii: "\n"), body.allSatisfy(isBodyByte) { return true }
        }
        return false
    }

    static func isBodyByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="), UInt8(ascii: "\r"), UInt8(ascii: "\n"):
            true
        default:
            false
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        var index = start
        while index + needle.count <= haystack.count {
            if haystack[index..<index + needle.count].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}

extension CreateParticipantTokenRequest: APIRequest {
    public static var operation: APIOperation { .createParticipantToken }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.arn(stageArn, .stage, at: "stageArn")
        try Rule.range(duration, ModelLimits.participantTokenDurationMinutes, at: "duration")
        if let userId { try Rule.length(userId, ModelLimits.userIdLength, at: "userId") }
        try Rule.attributes(attributes)
        try Rule.count(capabilities, ModelLimits.participantTokenCapabilities, at: "capabilities")
    }
}

extension ImportPublicKeyRequest: APIRequest {
    public static var operation: APIOperation { .importPublicKey }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.publicKeyMaterial(publicKeyMaterial)
        try Rule.name(name, at: "name")
        try Rule.tags(tags)
    }
}

extension GetPublicKeyRequest: APIRequest {
    public static var operation: APIOperation { .getPublicKey }
    public func validate(options: ValidationOptions) throws(APIError) { try Rule.arn(arn, .publicKey, at: "arn") }
}

extension DeletePublicKeyRequest: APIRequest {
    public static var operation: APIOperation { .deletePublicKey }
    public func validate(options: ValidationOptions) throws(APIError) { try Rule.arn(arn, .publicKey, at: "arn") }
}

extension ListPublicKeysRequest: APIRequest {
    public static var operation: APIOperation { .listPublicKeys }
    public func validate(options: ValidationOptions) throws(APIError) {
        try Rule.nextToken(nextToken)
        try Rule.maxResults(maxResults)
    }
}
