// Signs requests the way botocore does, for tests and tools that talk to the daemon
// without the AWS CLI (the verifier's tests check it against botocore itself).

/// Adds `x-amz-date`, `x-amz-content-sha256` (optional) and `Authorization` to a request.
public struct SigV4Signer: Sendable {
    /// How the request path becomes the canonical URI.
    public enum PathRule: Sendable {
        /// Every service but S3: dot segments removed, then the (encoded) path encoded again.
        case normalizedAndEncodedAgain
        /// S3: the path exactly as sent, already percent-encoded once; never normalized,
        /// since `a/../b` and `a//b` are distinct object keys.
        case asSent
    }

    public var accessKeyId: String
    public var secret: String
    public var region: String
    public var service: String

    public init(accessKeyId: String, secret: String, region: String, service: String = "ivs") {
        self.accessKeyId = accessKeyId
        self.secret = secret
        self.region = region
        self.service = service
    }

    /// Returns `request` with the signing headers appended. Every header already present is
    /// signed (a `host` header must be among them), unless `signedHeaderNames` narrows it.
    public func sign(_ request: SignedRequest, at time: SigV4Time, body: [UInt8],
                     includeContentHash: Bool = false, signedHeaderNames: [String]? = nil,
                     pathRule: PathRule = .normalizedAndEncodedAgain) -> SignedRequest {
        var signed = request
        signed.headers.removeAll { ["authorization", "x-amz-date"].contains($0.name.lowercased()) }
        signed.headers.append((name: "X-Amz-Date", value: time.amzDate))
        let payloadHash = SigV4Canonical.sha256Hex(body)
        if includeContentHash { signed.headers.append((name: "X-Amz-Content-SHA256", value: payloadHash)) }

        let names = signedHeaderNames ?? Array(Set(signed.headers.map { $0.name.lowercased() })).sorted()
        let canonicalURI = switch pathRule {
        case .normalizedAndEncodedAgain: SigV4Canonical.canonicalURI(rawPath: signed.path)
        case .asSent: signed.path.isEmpty ? "/" : signed.path
        }
        let headers = (try? SigV4Canonical.canonicalHeaders(signedHeaders: names, values: signed.headerValues)) ?? ""
        let canonicalRequest = SigV4Canonical.canonicalRequest(
            method: signed.method, canonicalURI: canonicalURI,
            canonicalQuery: SigV4Canonical.canonicalQueryString(signed.query),
            canonicalHeaders: headers, signedHeaders: names, payloadHash: payloadHash)
        let scope = SigV4Canonical.credentialScope(date: time.scopeDate, region: region, service: service)
        let stringToSign = SigV4Canonical.stringToSign(timestamp: time.amzDate, scope: scope,
                                                       canonicalRequest: canonicalRequest)
        let signature = SigV4Canonical.signature(secret: secret, date: time.scopeDate, region: region,
                                                 service: service, stringToSign: stringToSign)
        signed.headers.append((name: "Authorization",
                               value: "\(SigV4Canonical.algorithm) Credential=\(accessKeyId)/\(scope), "
                                   + "SignedHeaders=\(names.joined(separator: ";")), Signature=\(signature)"))
        return signed
    }
}
