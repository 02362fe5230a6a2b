// Where an S3-compatible bucket is and how to sign for it. Pure: URL building only.
public import Foundation

/// One bucket on an S3-compatible endpoint (AWS S3, MinIO, Ceph RGW, moto).
public struct S3StorageConfiguration: Sendable, Equatable {
    /// `https://s3.us-west-2.amazonaws.com` or `http://127.0.0.1:9000`. A path on the
    /// endpoint (a gateway mounted under `/s3`) is kept in front of the bucket.
    public var endpoint: URL
    public var bucket: String
    /// The signing region (`us-east-1` for most custom endpoints).
    public var region: String
    public var accessKeyId: String
    public var secretAccessKey: String
    /// STS session token for temporary credentials, sent as `x-amz-security-token`.
    public var sessionToken: String?
    /// `endpoint/bucket/key` when true; `bucket.endpoint/key` (virtual-hosted) when false.
    /// Custom endpoints rarely resolve bucket subdomains, AWS prefers virtual hosts.
    public var pathStyle: Bool
    /// Attempts per request, the first included (so 5 means up to 4 retries).
    public var maxAttempts: Int
    /// Prepended to every key (`recordings` → `recordings/<key>`); `list` strips it again.
    public var keyPrefix: String?
    /// First retry waits about this long, doubling per attempt up to `maximumRetryDelay`.
    public var baseRetryDelay: Duration
    public var maximumRetryDelay: Duration
    /// Deadline for one attempt (connect, send, receive).
    public var requestTimeout: Duration

    public init(endpoint: URL, bucket: String, region: String, accessKeyId: String, secretAccessKey: String,
                sessionToken: String? = nil, pathStyle: Bool? = nil, maxAttempts: Int = 5, keyPrefix: String? = nil,
                baseRetryDelay: Duration = .milliseconds(200), maximumRetryDelay: Duration = .seconds(5),
                requestTimeout: Duration = .seconds(60)) {
        self.endpoint = endpoint
        self.bucket = bucket
        self.region = region
        self.accessKeyId = accessKeyId
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.pathStyle = pathStyle ?? !Self.isAmazonHost(endpoint.host ?? "")
        self.maxAttempts = max(1, maxAttempts)
        self.keyPrefix = keyPrefix
        self.baseRetryDelay = baseRetryDelay
        self.maximumRetryDelay = maximumRetryDelay
        self.requestTimeout = requestTimeout
    }

    static func isAmazonHost(_ host: String) -> Bool {
        host == "amazonaws.com" || host.hasSuffix(".amazonaws.com") || host.hasSuffix(".amazonaws.com.cn")
    }

    /// The normalized key prefix with its trailing `/` (`""` when none).
    var objectKeyPrefix: String {
        guard let keyPrefix else { return "" }
        let trimmed = keyPrefix.split(separator: "/").joined(separator: "/")
        return trimmed.isEmpty ? "" : trimmed + "/"
    }

    /// `http` or `https`, the `Host` header value and the encoded path for `objectKey` (a
    /// full S3 key, prefix included; nil for the bucket itself).
    func location(objectKey: String?) -> (url: String, host: String, path: String) {
        let scheme = endpoint.scheme ?? "https"
        var host = endpoint.host ?? "localhost"
        if !pathStyle { host = "\(bucket).\(host)" }
        if let port = endpoint.port, !(scheme == "http" && port == 80), !(scheme == "https" && port == 443) {
            host += ":\(port)"
        }
        let base = endpoint.path.split(separator: "/").joined(separator: "/")
        var path = base.isEmpty ? "" : "/" + base
        if pathStyle { path += "/" + SigV4Path.encode(bucket) }
        if let objectKey {
            path += "/" + SigV4Path.encode(objectKey)
        } else if !pathStyle || path.isEmpty {
            path += "/"
        }
        return ("\(scheme)://\(host)\(path)", host, path)
    }
}

extension S3StorageConfiguration {
    /// A path-style bucket URL, `http[s]://host[:port]/bucket[/key/prefix]`, as the
    /// `compose --s3` flag takes it; nil when the URL names no bucket.
    public init?(bucketURL: URL, region: String, accessKeyId: String, secretAccessKey: String, sessionToken: String? = nil) {
        let parts = bucketURL.path.split(separator: "/").map(String.init)
        guard let scheme = bucketURL.scheme, ["http", "https"].contains(scheme), let host = bucketURL.host,
              let bucket = parts.first, !bucket.isEmpty else { return nil }
        var components = URLComponents()
        components.scheme = scheme
        components.host = host
        components.port = bucketURL.port
        guard let endpoint = components.url else { return nil }
        let prefix = parts.dropFirst().joined(separator: "/")
        self.init(endpoint: endpoint, bucket: bucket, region: region, accessKeyId: accessKeyId,
                  secretAccessKey: secretAccessKey, sessionToken: sessionToken, pathStyle: true,
                  keyPrefix: prefix.isEmpty ? nil : prefix)
    }

    /// Where `key` lives, for messages: `s3://bucket/prefix/key`.
    public func displayURL(forKey key: String) -> String { "s3://\(bucket)/\(objectKeyPrefix)\(key)" }
}
