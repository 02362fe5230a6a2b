// Verifies AWS Signature Version 4 on requests from the AWS CLI and SDKs (service
// signing name `ivs`). Header-based signatures only; presigned query-string URLs are not
// accepted (no IVS Real-Time operation is called that way).
//
// The server builds a SignedRequest from the request *as received*: the raw request
// target (`/tags/arn%3Aaws%3A...?tagKeys=a`, not the router's decoded path), every header
// line, and the body bytes after it has collected them (or their SHA-256), then maps
// `.denied` to AccessDeniedException (403).

public import Foundation

/// The parsed `Authorization: AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...`.
public struct SigV4Authorization: Sendable, Equatable {
    public var accessKeyId: String
    /// `yyyyMMdd`.
    public var scopeDate: String
    public var region: String
    public var service: String
    public var terminator: String
    /// Lower-case names, in the order the client listed them.
    public var signedHeaders: [String]
    public var signature: String

    public init(parsing header: String) throws(AuthFailure) {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard let space = trimmed.firstIndex(of: " ") else { throw .malformedAuthorization("no parameters") }
        let algorithm = String(trimmed[..<space])
        guard algorithm == SigV4Canonical.algorithm else { throw .unsupportedAlgorithm(algorithm) }

        var parameters: [String: String] = [:]
        for field in trimmed[trimmed.index(after: space)...].split(separator: ",") {
            let pair = field.trimmingCharacters(in: .whitespaces)
            guard let equals = pair.firstIndex(of: "=") else { throw .malformedAuthorization("'\(pair)'") }
            let key = String(pair[..<equals])
            guard parameters[key] == nil else { throw .malformedAuthorization("\(key) repeated") }
            parameters[key] = String(pair[pair.index(after: equals)...])
        }
        guard let credential = parameters["Credential"], let signed = parameters["SignedHeaders"],
              let signature = parameters["Signature"]
        else { throw .malformedAuthorization("Credential, SignedHeaders and Signature are required") }

        let scope = credential.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard scope.count == 5, !scope[0].isEmpty else {
            throw .malformedAuthorization("Credential must be AKID/date/region/service/aws4_request")
        }
        let names = signed.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        guard !names.contains(where: \.isEmpty), names.allSatisfy({ $0 == $0.lowercased() }) else {
            throw .malformedAuthorization("SignedHeaders must be lower-case names separated by ';'")
        }
        guard signature.utf8.count == 64 else { throw .malformedAuthorization("Signature must be 64 hex digits") }

        accessKeyId = scope[0]
        scopeDate = scope[1]
        region = scope[2]
        service = scope[3]
        terminator = scope[4]
        signedHeaders = names
        self.signature = signature.lowercased()
    }
}

/// Checks SigV4 signatures against configured access keys.
public struct SigV4Verifier: Sendable {
    public let region: String
    public let service: String
    /// How far the request time may be from `now`, either way.
    public let maxClockSkew: Duration
    private let credentials: [String: String]
    private let now: @Sendable () -> Date

    /// - Parameters:
    ///   - credentials: access key ID → secret access key.
    ///   - now: the clock; tests pass a fixed time.
    public init(credentials: [String: String], region: String, service: String = "ivs",
                maxClockSkew: Duration = .seconds(15 * 60),
                now: @escaping @Sendable () -> Date = { Date() }) {
        self.credentials = credentials
        self.region = region
        self.service = service
        self.maxClockSkew = maxClockSkew
        self.now = now
    }

    public func verify(_ request: SignedRequest) -> AuthResult {
        do throws(AuthFailure) {
            return .allowed(accessKeyId: try check(request))
        } catch {
            return .denied(error)
        }
    }

    /// The access key ID of a correctly signed request.
    public func check(_ request: SignedRequest) throws(AuthFailure) -> String {
        let authorizations = request.headerValues("authorization")
        guard let header = authorizations.first else { throw .missingAuthorization }
        guard authorizations.count == 1 else { throw .malformedAuthorization("more than one Authorization header") }
        let authorization = try SigV4Authorization(parsing: header)

        guard let secret = credentials[authorization.accessKeyId] else {
            throw .unknownAccessKey(authorization.accessKeyId)
        }

        // Time: x-amz-date wins over Date; the string to sign carries it as yyyyMMddTHHmmssZ.
        let time: SigV4Time
        let amzDates = request.headerValues("x-amz-date")
        if let amzDate = amzDates.first {
            guard amzDates.count == 1, let parsed = SigV4Time(amzDate: amzDate.trimmingCharacters(in: .whitespaces))
            else { throw .malformedDate(amzDate) }
            time = parsed
        } else if let date = request.headerValues("date").first {
            guard let parsed = SigV4Time(httpDate: SigV4Canonical.trimAll(date)) else { throw .malformedDate(date) }
            time = parsed
        } else {
            throw .missingDate
        }
        let skew = abs(Double(time.secondsSince1970) - now().timeIntervalSince1970)
        guard skew <= Double(maxClockSkew.components.seconds) else { throw .requestTimeTooSkewed }

        guard authorization.scopeDate == time.scopeDate else {
            throw .credentialScopeMismatch("date \(authorization.scopeDate) is not the request date \(time.scopeDate)")
        }
        guard authorization.region == region else {
            throw .credentialScopeMismatch("region \(authorization.region) is not \(region)")
        }
        guard authorization.service == service else {
            throw .credentialScopeMismatch("service \(authorization.service) is not \(service)")
        }
        guard authorization.terminator == SigV4Canonical.terminator else {
            throw .credentialScopeMismatch("scope must end with \(SigV4Canonical.terminator)")
        }
        guard authorization.signedHeaders.contains("host") else { throw .hostNotSigned }

        // Payload integrity: the hash signed is always the one of the bytes received.
        let payloadHash: String
        switch request.payload {
        case .bytes(let body): payloadHash = SigV4Canonical.sha256Hex(body)
        case .sha256Hex(let hash): payloadHash = hash.lowercased()
        }
        let claims = request.headerValues("x-amz-content-sha256")
        if let claim = claims.first {
            let value = SigV4Canonical.trimAll(claim)
            if value == "UNSIGNED-PAYLOAD" || value.hasPrefix("STREAMING-") { throw .unsignedPayload }
            guard claims.count == 1, value.lowercased() == payloadHash else { throw .payloadHashMismatch }
        }

        let canonicalHeaders = try SigV4Canonical.canonicalHeaders(
            signedHeaders: authorization.signedHeaders, values: request.headerValues)
        let canonicalRequest = SigV4Canonical.canonicalRequest(
            method: request.method,
            canonicalURI: SigV4Canonical.canonicalURI(rawPath: request.path),
            canonicalQuery: SigV4Canonical.canonicalQueryString(request.query),
            canonicalHeaders: canonicalHeaders,
            signedHeaders: authorization.signedHeaders,
            payloadHash: payloadHash)
        let scope = SigV4Canonical.credentialScope(date: authorization.scopeDate, region: region, service: service)
        let stringToSign = SigV4Canonical.stringToSign(timestamp: time.amzDate, scope: scope,
                                                       canonicalRequest: canonicalRequest)
        let expected = SigV4Canonical.signature(secret: secret, date: authorization.scopeDate, region: region,
                                                service: service, stringToSign: stringToSign)
        guard SigV4Canonical.constantTimeEqual(expected, authorization.signature) else { throw .signatureMismatch }
        return authorization.accessKeyId
    }
}
