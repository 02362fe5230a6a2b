// The buckets a StorageConfiguration may name, and the spool in front of the S3 ones. A
// bucket is a local directory (`"recordings": "/var/lib/…/recordings"`, the embedded
// default) or an S3-compatible endpoint (`{"s3": {"endpoint": …}}`: AWS, MinIO, Ceph RGW).
// Credentials come from the environment or an AWS shared-credentials file, never from the
// configuration itself, so they are never in a file that gets copied around or logged.
import Foundation
public import Storage

extension ServerConfiguration {
    public enum Bucket: Codable, Equatable, Sendable, ExpressibleByStringLiteral {
        /// A directory stands in for the bucket.
        case directory(String)
        case s3(S3Bucket)

        public init(stringLiteral value: String) { self = .directory(value) }

        enum CodingKeys: String, CodingKey, CaseIterable { case directory, s3 }

        public init(from decoder: any Decoder) throws {
            if let path = try? decoder.singleValueContainer().decode(String.self) {
                self = .directory(path)
                return
            }
            let c = try decoder.container(keyedBy: CodingKeys.self)
            switch (try c.decodeIfPresent(String.self, forKey: .directory), try c.decodeIfPresent(S3Bucket.self, forKey: .s3)) {
            case (let path?, nil): self = .directory(path)
            case (nil, let s3?): self = .s3(s3)
            default:
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                        debugDescription: "give a directory (a string) or {\"s3\": {\"endpoint\": …}}"))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            switch self {
            case .directory(let path):
                var c = encoder.singleValueContainer()
                try c.encode(path)
            case .s3(let s3):
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(s3, forKey: .s3)
            }
        }

        public var directory: String? {
            if case .directory(let path) = self { return path }
            return nil
        }

        /// Where objects go, for people: a path, or `s3://bucket/prefix at endpoint`.
        public var summary: String {
            switch self {
            case .directory(let path): return path
            case .s3(let s3):
                let prefix = s3.keyPrefix.map { "/" + $0 } ?? ""
                return "s3://\(s3.bucket ?? "<name>")\(prefix) at \(s3.endpoint)"
            }
        }
    }

    /// An S3-compatible bucket.
    public struct S3Bucket: Codable, Equatable, Sendable {
        /// `https://s3.eu-west-1.amazonaws.com`, `http://minio.internal:9000`, …
        public var endpoint: String
        /// The bucket's name on the endpoint; the configuration's key when absent.
        public var bucket: String?
        public var region: String
        /// Path-style URLs (`endpoint/bucket/key`); default: yes, except on amazonaws.com.
        public var pathStyle: Bool?
        /// Prepended to every object key.
        public var keyPrefix: String?
        public var credentials: Credentials
        /// Deadline for one request attempt (connect, send, answer).
        public var requestTimeoutSeconds: Double
        /// Attempts per request before the spool's own retries take over.
        public var maxAttempts: Int

        public init(endpoint: String, bucket: String? = nil, region: String = "us-east-1", pathStyle: Bool? = nil,
                    keyPrefix: String? = nil, credentials: Credentials = .environment, requestTimeoutSeconds: Double = 30,
                    maxAttempts: Int = 3) {
            self.endpoint = endpoint
            self.bucket = bucket
            self.region = region
            self.pathStyle = pathStyle
            self.keyPrefix = keyPrefix
            self.credentials = credentials
            self.requestTimeoutSeconds = requestTimeoutSeconds
            self.maxAttempts = maxAttempts
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case endpoint, bucket, region, pathStyle, keyPrefix, credentials, requestTimeoutSeconds, maxAttempts
            case accessKeyId, secretAccessKey
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            if c.contains(.accessKeyId) || c.contains(.secretAccessKey) {
                throw DecodingError.dataCorrupted(.init(
                    codingPath: decoder.codingPath,
                    debugDescription: "secrets are not accepted in the configuration; use \"credentials\": \"environment\" "
                        + "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) or {\"file\": \"/etc/stage-compositor/s3-credentials\"}"))
            }
            let d = S3Bucket(endpoint: "")
            endpoint = try c.decode(String.self, forKey: .endpoint)
            bucket = try c.decodeIfPresent(String.self, forKey: .bucket)
            region = try c.decodeIfPresent(String.self, forKey: .region) ?? d.region
            pathStyle = try c.decodeIfPresent(Bool.self, forKey: .pathStyle)
            keyPrefix = try c.decodeIfPresent(String.self, forKey: .keyPrefix)
            credentials = try c.decodeIfPresent(Credentials.self, forKey: .credentials) ?? d.credentials
            requestTimeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .requestTimeoutSeconds) ?? d.requestTimeoutSeconds
            maxAttempts = try c.decodeIfPresent(Int.self, forKey: .maxAttempts) ?? d.maxAttempts
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(endpoint, forKey: .endpoint)
            try c.encodeIfPresent(bucket, forKey: .bucket)
            try c.encode(region, forKey: .region)
            try c.encodeIfPresent(pathStyle, forKey: .pathStyle)
            try c.encodeIfPresent(keyPrefix, forKey: .keyPrefix)
            try c.encode(credentials, forKey: .credentials)
            try c.encode(requestTimeoutSeconds, forKey: .requestTimeoutSeconds)
            try c.encode(maxAttempts, forKey: .maxAttempts)
        }

        /// Problems with the settings, each starting with `key`.
        func problems(key: String) -> [String] {
            var problems: [String] = []
            if let url = URL(string: endpoint), ["http", "https"].contains(url.scheme ?? ""), url.host?.isEmpty == false {
            } else {
                problems.append("\(key).endpoint: \(endpoint) is not an http:// or https:// URL")
            }
            if region.isEmpty { problems.append("\(key).region: must not be empty") }
            if !(requestTimeoutSeconds > 0) { problems.append("\(key).requestTimeoutSeconds: must be positive") }
            if maxAttempts < 1 { problems.append("\(key).maxAttempts: must be at least 1") }
            if case .file(let path, _) = credentials, path.isEmpty { problems.append("\(key).credentials.file: must not be empty") }
            return problems
        }

        /// The storage settings, with the credentials read now.
        public func storageConfiguration(name: String, environment: [String: String]) throws(CredentialsError) -> S3StorageConfiguration {
            let keys = try credentials.resolve(environment: environment)
            guard let url = URL(string: endpoint) else { throw CredentialsError("endpoint \(endpoint) is not a URL") }
            return S3StorageConfiguration(
                endpoint: url, bucket: bucket ?? name, region: region, accessKeyId: keys.accessKeyId,
                secretAccessKey: keys.secretAccessKey, sessionToken: keys.sessionToken, pathStyle: pathStyle,
                maxAttempts: maxAttempts, keyPrefix: keyPrefix,
                requestTimeout: .milliseconds(Int64(requestTimeoutSeconds * 1000)))
        }
    }

    public struct CredentialsError: Error, Equatable, Sendable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// Where an S3 bucket's keys come from.
    public enum Credentials: Codable, Equatable, Sendable {
        /// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and optionally AWS_SESSION_TOKEN.
        case environment
        /// An AWS shared-credentials file (INI): `aws_access_key_id`, `aws_secret_access_key`,
        /// optionally `aws_session_token`, in section `[profile]`.
        case file(path: String, profile: String)

        enum CodingKeys: String, CodingKey { case file, profile }

        public init(from decoder: any Decoder) throws {
            if let word = try? decoder.singleValueContainer().decode(String.self) {
                guard word == "environment" else {
                    throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                            debugDescription: "\"environment\" or {\"file\": path, \"profile\": name}"))
                }
                self = .environment
                return
            }
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self = .file(path: try c.decode(String.self, forKey: .file),
                         profile: try c.decodeIfPresent(String.self, forKey: .profile) ?? "default")
        }

        public func encode(to encoder: any Encoder) throws {
            switch self {
            case .environment:
                var c = encoder.singleValueContainer()
                try c.encode("environment")
            case .file(let path, let profile):
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(path, forKey: .file)
                try c.encode(profile, forKey: .profile)
            }
        }

        public struct Keys: Equatable, Sendable {
            public var accessKeyId: String
            public var secretAccessKey: String
            public var sessionToken: String?
        }

        /// Reads the keys. Errors name what is missing, never a secret.
        public func resolve(environment: [String: String]) throws(CredentialsError) -> Keys {
            switch self {
            case .environment:
                guard let id = environment["AWS_ACCESS_KEY_ID"], !id.isEmpty else {
                    throw CredentialsError("AWS_ACCESS_KEY_ID is not set in the daemon's environment")
                }
                guard let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty else {
                    throw CredentialsError("AWS_SECRET_ACCESS_KEY is not set in the daemon's environment")
                }
                let token = environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
                return Keys(accessKeyId: id, secretAccessKey: secret, sessionToken: token)
            case .file(let path, let profile):
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw CredentialsError("credentials file \(path) cannot be read")
                }
                let values = Self.parseSharedCredentials(String(decoding: data, as: UTF8.self))[profile] ?? [:]
                guard let id = values["aws_access_key_id"], let secret = values["aws_secret_access_key"] else {
                    throw CredentialsError("credentials file \(path) has no aws_access_key_id and aws_secret_access_key in [\(profile)]")
                }
                return Keys(accessKeyId: id, secretAccessKey: secret, sessionToken: values["aws_session_token"])
            }
        }

        /// `[section]` → `key = value`, as the AWS CLI writes `~/.aws/credentials`.
        static func parseSharedCredentials(_ text: String) -> [String: [String: String]] {
            var sections: [String: [String: String]] = [:]
            var current: String?
            for raw in text.split(whereSeparator: \.isNewline) {
                let line = raw.trimmingCharacters(in: .whitespaces)
                if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
                if line.hasPrefix("["), line.hasSuffix("]") {
                    var name = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                    if name.hasPrefix("profile ") { name = String(name.dropFirst("profile ".count)) }
                    current = name
                    continue
                }
                guard let current, let equals = line.firstIndex(of: "=") else { continue }
                let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
                let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                sections[current, default: [:]][key] = value
            }
            return sections
        }
    }

    /// The local spool in front of S3 buckets: recordings are written here first.
    public struct Spool: Codable, Equatable, Sendable {
        /// Default: `<stateDirectory>/spool`.
        public var directory: String?
        /// Bytes all of one recording's spool may hold (about 20 minutes of 720p at 2.5 Mb/s
        /// per GiB); beyond it the recording fails with a reason.
        public var maxBytes: Int64
        /// At the end of a composition, how long it waits for the spool to drain.
        public var drainTimeoutSeconds: Double

        public init(directory: String? = nil, maxBytes: Int64 = 2 << 30, drainTimeoutSeconds: Double = 30) {
            self.directory = directory
            self.maxBytes = maxBytes
            self.drainTimeoutSeconds = drainTimeoutSeconds
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Spool()
            directory = try c.decodeIfPresent(String.self, forKey: .directory)
            maxBytes = try c.decodeIfPresent(Int64.self, forKey: .maxBytes) ?? d.maxBytes
            drainTimeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .drainTimeoutSeconds) ?? d.drainTimeoutSeconds
        }

        func problems() -> [String] {
            var problems: [String] = []
            if maxBytes < 1 << 20 { problems.append("spool.maxBytes: must be at least 1048576") }
            if !(drainTimeoutSeconds >= 0) { problems.append("spool.drainTimeoutSeconds: must not be negative") }
            if directory?.isEmpty == true { problems.append("spool.directory: must not be empty") }
            return problems
        }
    }

    /// The spool's directory.
    public var spoolDirectory: String { spool.directory ?? stateDirectory + "/spool" }

    /// Problems with the buckets, each naming its key.
    func bucketProblems() -> [String] {
        var problems: [String] = []
        for name in buckets.keys.sorted() {
            let valid = (3...63).contains(name.count) && name.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "."
            }
            if !valid { problems.append("buckets.\(name): bucket names are 3-63 characters of [a-z0-9-.]") }
            switch buckets[name] {
            case .directory(let path)?:
                if path.isEmpty { problems.append("buckets.\(name): the directory must not be empty") }
            case .s3(let s3)?:
                problems += s3.problems(key: "buckets.\(name).s3")
            case nil:
                break
            }
        }
        return problems + spool.problems()
    }

    /// S3 buckets whose credentials cannot be read here (the service's environment may differ).
    func bucketWarnings(environment: [String: String]) -> [String] {
        buckets.keys.sorted().compactMap { name in
            guard case .s3(let s3)? = buckets[name] else { return nil }
            do {
                _ = try s3.credentials.resolve(environment: environment)
                return nil
            } catch {
                return "buckets.\(name).s3.credentials: \(error) (the daemon will not start without them)"
            }
        }
    }
}
