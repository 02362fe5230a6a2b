// EncoderConfiguration and StorageConfiguration shapes and operations.
public import MediaCore

/// The model's `Video`: every member optional; `framerate` is a float in the model.
public struct Video: Codable, Hashable, Sendable {
    public var width: Int?
    public var height: Int?
    public var framerate: Float?
    public var bitrate: Int?

    public static let defaultWidth = 1280
    public static let defaultHeight = 720
    public static let defaultFramerate: Float = 30
    public static let defaultBitrate = 2_500_000

    public init(width: Int? = nil, height: Int? = nil, framerate: Float? = nil, bitrate: Int? = nil) {
        self.width = width
        self.height = height
        self.framerate = framerate
        self.bitrate = bitrate
    }

    /// Every member set, defaults (1280x720, 30 fps, 2,500,000 bps) where absent.
    public func withDefaults() -> Video {
        Video(width: width ?? Self.defaultWidth, height: height ?? Self.defaultHeight,
              framerate: framerate ?? Self.defaultFramerate, bitrate: bitrate ?? Self.defaultBitrate)
    }

    /// The frame rate as an exact rational for the encoder and the output clock:
    /// whole rates stay whole; NTSC-style rates (29.97, 59.94, 23.976) become n*1000/1001;
    /// anything else is taken to the millisecond (fps*1000/1000).
    public var frameRate: Rational {
        let fps = framerate ?? Self.defaultFramerate
        let milli = Int64((fps * 1000).rounded())
        if milli % 1000 == 0 { return Rational(milli / 1000, 1) }
        let ntscBase = Int64((fps * 1.001).rounded())
        if abs(Float(ntscBase) * 1000 / 1001 - fps) < 0.005 { return Rational(ntscBase * 1000, 1001) }
        return Rational(milli, 1000)
    }
}

public struct EncoderConfiguration: Codable, Hashable, Sendable {
    public var arn: String
    public var name: String?
    public var video: Video?
    public var tags: Tags?

    public init(arn: String, name: String? = nil, video: Video? = nil, tags: Tags? = nil) {
        self.arn = arn
        self.name = name
        self.video = video
        self.tags = tags
    }

    public var summary: EncoderConfigurationSummary { EncoderConfigurationSummary(arn: arn, name: name, tags: tags) }
}

public struct EncoderConfigurationSummary: Codable, Hashable, Sendable {
    public var arn: String
    public var name: String?
    public var tags: Tags?

    public init(arn: String, name: String? = nil, tags: Tags? = nil) {
        self.arn = arn
        self.name = name
        self.tags = tags
    }
}

public struct CreateEncoderConfigurationRequest: Codable, Hashable, Sendable {
    public var name: String?
    public var video: Video?
    public var tags: Tags?

    public init(name: String? = nil, video: Video? = nil, tags: Tags? = nil) {
        self.name = name
        self.video = video
        self.tags = tags
    }

    /// The resource this request creates, with IVS's defaults filled in
    /// (name "", video 1280x720 30 fps 2.5 Mbps, tags {}).
    public func makeEncoderConfiguration(arn: IVSARN) -> EncoderConfiguration {
        EncoderConfiguration(arn: arn.description, name: name ?? "", video: (video ?? Video()).withDefaults(), tags: tags ?? [:])
    }
}

public struct CreateEncoderConfigurationResponse: Codable, Hashable, Sendable {
    public var encoderConfiguration: EncoderConfiguration?
    public init(encoderConfiguration: EncoderConfiguration?) { self.encoderConfiguration = encoderConfiguration }
}

public struct GetEncoderConfigurationRequest: Codable, Hashable, Sendable {
    public var arn: String
    public init(arn: String) { self.arn = arn }
}

public struct GetEncoderConfigurationResponse: Codable, Hashable, Sendable {
    public var encoderConfiguration: EncoderConfiguration?
    public init(encoderConfiguration: EncoderConfiguration?) { self.encoderConfiguration = encoderConfiguration }
}

public struct ListEncoderConfigurationsRequest: Codable, Hashable, Sendable {
    public var nextToken: String?
    public var maxResults: Int?
    public init(nextToken: String? = nil, maxResults: Int? = nil) {
        self.nextToken = nextToken
        self.maxResults = maxResults
    }
}

public struct ListEncoderConfigurationsResponse: Codable, Hashable, Sendable {
    public var encoderConfigurations: [EncoderConfigurationSummary]
    public var nextToken: String?
    public init(encoderConfigurations: [EncoderConfigurationSummary], nextToken: String? = nil) {
        self.encoderConfigurations = encoderConfigurations
        self.nextToken = nextToken
    }
}

public struct DeleteEncoderConfigurationRequest: Codable, Hashable, Sendable {
    public var arn: String
    public init(arn: String) { self.arn = arn }
}

public struct DeleteEncoderConfigurationResponse: Codable, Hashable, Sendable {
    public init() {}
}

// MARK: - StorageConfiguration

public struct S3StorageConfiguration: Codable, Hashable, Sendable {
    public var bucketName: String
    public init(bucketName: String) { self.bucketName = bucketName }
}

public struct StorageConfiguration: Codable, Hashable, Sendable {
    public var arn: String
    public var name: String?
    public var s3: S3StorageConfiguration?
    public var tags: Tags?

    public init(arn: String, name: String? = nil, s3: S3StorageConfiguration? = nil, tags: Tags? = nil) {
        self.arn = arn
        self.name = name
        self.s3 = s3
        self.tags = tags
    }

    public var summary: StorageConfigurationSummary { StorageConfigurationSummary(arn: arn, name: name, s3: s3, tags: tags) }
}

public struct StorageConfigurationSummary: Codable, Hashable, Sendable {
    public var arn: String
    public var name: String?
    public var s3: S3StorageConfiguration?
    public var tags: Tags?

    public init(arn: String, name: String? = nil, s3: S3StorageConfiguration? = nil, tags: Tags? = nil) {
        self.arn = arn
        self.name = name
        self.s3 = s3
        self.tags = tags
    }
}

public struct CreateStorageConfigurationRequest: Codable, Hashable, Sendable {
    public var name: String?
    public var s3: S3StorageConfiguration
    public var tags: Tags?

    public init(name: String? = nil, s3: S3StorageConfiguration, tags: Tags? = nil) {
        self.name = name
        self.s3 = s3
        self.tags = tags
    }

    public func makeStorageConfiguration(arn: IVSARN) -> StorageConfiguration {
        StorageConfiguration(arn: arn.description, name: name ?? "", s3: s3, tags: tags ?? [:])
    }
}

public struct CreateStorageConfigurationResponse: Codable, Hashable, Sendable {
    public var storageConfiguration: StorageConfiguration?
    public init(storageConfiguration: StorageConfiguration?) { self.storageConfiguration = storageConfiguration }
}

public struct GetStorageConfigurationRequest: Codable, Hashable, Sendable {
    public var arn: String
    public init(arn: String) { self.arn = arn }
}

public struct GetStorageConfigurationResponse: Codable, Hashable, Sendable {
    public var storageConfiguration: StorageConfiguration?
    public init(storageConfiguration: StorageConfiguration?) { self.storageConfiguration = storageConfiguration }
}

public struct ListStorageConfigurationsRequest: Codable, Hashable, Sendable {
    public var nextToken: String?
    public var maxResults: Int?
    public init(nextToken: String? = nil, maxResults: Int? = nil) {
        self.nextToken = nextToken
        self.maxResults = maxResults
    }
}

public struct ListStorageConfigurationsResponse: Codable, Hashable, Sendable {
    public var storageConfigurations: [StorageConfigurationSummary]
    public var nextToken: String?
    public init(storageConfigurations: [StorageConfigurationSummary], nextToken: String? = nil) {
        self.storageConfigurations = storageConfigurations
        self.nextToken = nextToken
    }
}

public struct DeleteStorageConfigurationRequest: Codable, Hashable, Sendable {
    public var arn: String
    public init(arn: String) { self.arn = arn }
}

public struct DeleteStorageConfigurationResponse: Codable, Hashable, Sendable {
    public init() {}
}
