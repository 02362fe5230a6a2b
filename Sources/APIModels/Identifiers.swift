// Resource IDs and ARNs. Every ARN that reaches a store, a path or a log is parsed here
// first, so an ID can only ever be `[a-zA-Z0-9-]+` (no `/`, `..` or NUL in a file path).

/// The resource types that appear in ivs-realtime ARNs.
public enum IVSResourceType: String, Sendable, CaseIterable {
    case stage
    case composition
    case encoderConfiguration = "encoder-configuration"
    case storageConfiguration = "storage-configuration"
    case channel
    case ingestConfiguration = "ingest-configuration"
    case publicKey = "public-key"
}

/// `arn:aws:ivs:<region>:<account>:<resource-type>/<id>`, parsed strictly after the
/// model's patterns: region `[a-z0-9-]+`, account `[0-9]+`, id `[a-zA-Z0-9-]+`, at most
/// 128 characters in all.
public struct IVSARN: Hashable, Sendable, CustomStringConvertible {
    public let region: String
    public let account: String
    public let resourceType: IVSResourceType
    public let resourceID: String

    public static let maximumLength = 128

    /// Builds an ARN; nil when a part breaks the model's pattern.
    public init?(region: String, account: String, resourceType: IVSResourceType, resourceID: String) {
        guard CharacterRules.isRegion(region), CharacterRules.isAccount(account),
              CharacterRules.isResourceID(resourceID) else { return nil }
        self.region = region
        self.account = account
        self.resourceType = resourceType
        self.resourceID = resourceID
        guard description.unicodeScalars.count <= IVSARN.maximumLength else { return nil }
    }

    /// Parses any IVS ARN; `expecting` restricts the resource type.
    public init?(parsing text: String, expecting type: IVSResourceType? = nil) {
        guard text.unicodeScalars.count <= IVSARN.maximumLength, text.hasPrefix("arn:aws:ivs:") else { return nil }
        let rest = text.dropFirst("arn:aws:ivs:".count)
        let parts = rest.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let resource = parts[2].split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard resource.count == 2, let parsedType = IVSResourceType(rawValue: String(resource[0])),
              type == nil || type == parsedType else { return nil }
        self.init(region: String(parts[0]), account: String(parts[1]), resourceType: parsedType,
                  resourceID: String(resource[1]))
    }

    public var description: String { "arn:aws:ivs:\(region):\(account):\(resourceType.rawValue)/\(resourceID)" }
}

/// Where this deployment lives: the region and account that go into every ARN it mints.
public struct ARNContext: Sendable, Equatable {
    public let region: String
    public let account: String

    /// Nil when the region or account would make ARNs that break the model's pattern.
    public init?(region: String, account: String) {
        guard CharacterRules.isRegion(region), CharacterRules.isAccount(account) else { return nil }
        self.region = region
        self.account = account
    }

    /// A new ARN for a freshly generated ID.
    public func arn(_ type: IVSResourceType, id: ResourceID) -> IVSARN {
        // The ID alphabet and the checked region/account always satisfy the pattern.
        IVSARN(region: region, account: account, resourceType: type, resourceID: id.rawValue)!
    }

    /// Whether `arn` names a resource of this deployment.
    public func owns(_ arn: IVSARN) -> Bool { arn.region == region && arn.account == account }
}

/// A 12-character `[a-zA-Z0-9]` resource ID, as IVS mints them.
public struct ResourceID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public static let length = 12
    static let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")

    /// Accepts only generated-shape IDs (12 alphanumerics).
    public init?(_ rawValue: String) {
        guard rawValue.unicodeScalars.count == ResourceID.length,
              rawValue.unicodeScalars.allSatisfy(CharacterRules.isAlphanumeric) else { return nil }
        self.rawValue = rawValue
    }

    /// A random ID; pass a seeded generator in tests.
    public static func random(using generator: inout some RandomNumberGenerator) -> ResourceID {
        var text = ""
        for _ in 0..<length { text.append(alphabet.randomElement(using: &generator)!) }
        return ResourceID(text)!
    }

    public static func random() -> ResourceID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    public var description: String { rawValue }
}

/// The character classes of the model's patterns, checked without regular expressions.
enum CharacterRules {
    static func isAlphanumeric(_ s: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(s) || ("A"..."Z").contains(s) || ("0"..."9").contains(s)
    }
    static func isDigit(_ s: Unicode.Scalar) -> Bool { ("0"..."9").contains(s) }

    /// `[a-z0-9-]+`
    static func isRegion(_ text: String) -> Bool {
        !text.isEmpty && text.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || isDigit($0) || $0 == "-" }
    }
    /// `[0-9]+`
    static func isAccount(_ text: String) -> Bool { !text.isEmpty && text.unicodeScalars.allSatisfy(isDigit) }
    /// `[a-zA-Z0-9-]+`
    static func isResourceID(_ text: String) -> Bool {
        !text.isEmpty && text.unicodeScalars.allSatisfy { isAlphanumeric($0) || $0 == "-" }
    }
    /// `[a-zA-Z0-9-_]*` (names, attribute keys, idempotency tokens)
    static func isNameCharacter(_ s: Unicode.Scalar) -> Bool { isAlphanumeric(s) || s == "-" || s == "_" }
    /// `[a-z0-9-.]+` (S3 bucket names)
    static func isBucketCharacter(_ s: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(s) || isDigit(s) || s == "-" || s == "."
    }
    /// What a regular expression's `.` does not match (Java's line terminators).
    static func isLineTerminator(_ s: Unicode.Scalar) -> Bool {
        s == "\n" || s == "\r" || s == "\u{85}" || s == "\u{2028}" || s == "\u{2029}"
    }
    /// `[a-zA-Z0-9+/=_-]*` (pagination tokens)
    static func isTokenCharacter(_ s: Unicode.Scalar) -> Bool {
        isAlphanumeric(s) || s == "+" || s == "/" || s == "=" || s == "_" || s == "-"
    }
}
