/// Why a request was not authenticated. The server answers every case with
/// AccessDeniedException (403); `reason` is the message it may show.
public enum AuthFailure: Error, Sendable, Equatable, CustomStringConvertible {
    case missingAuthorization
    /// The Authorization header is not `AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...`.
    case malformedAuthorization(String)
    case unsupportedAlgorithm(String)
    case unknownAccessKey(String)
    /// Neither `x-amz-date` nor `Date`.
    case missingDate
    case malformedDate(String)
    case requestTimeTooSkewed
    /// The credential scope's date, region, service or terminator is not ours.
    case credentialScopeMismatch(String)
    case hostNotSigned
    /// A header named in SignedHeaders is absent from the request.
    case signedHeaderMissing(String)
    /// `x-amz-content-sha256` differs from the hash of the body received.
    case payloadHashMismatch
    /// `UNSIGNED-PAYLOAD` and streaming payloads: every body must be covered by the signature.
    case unsignedPayload
    case signatureMismatch

    public var reason: String {
        switch self {
        case .missingAuthorization: "missing Authorization"
        case .malformedAuthorization(let detail): "malformed Authorization: \(detail)"
        case .unsupportedAlgorithm(let algorithm): "unsupported signature algorithm \(algorithm)"
        case .unknownAccessKey: "unknown access key"
        case .missingDate: "missing x-amz-date"
        case .malformedDate(let value): "malformed request time \(value)"
        case .requestTimeTooSkewed: "request time too skewed"
        case .credentialScopeMismatch(let detail): "credential scope mismatch: \(detail)"
        case .hostNotSigned: "host not signed"
        case .signedHeaderMissing(let name): "signed header \(name) missing"
        case .payloadHashMismatch: "payload hash mismatch"
        case .unsignedPayload: "unsigned payload not accepted"
        case .signatureMismatch: "signature mismatch"
        }
    }

    public var description: String { reason }
}

/// The outcome of ``SigV4Verifier/verify(_:)``.
public enum AuthResult: Sendable, Equatable {
    case allowed(accessKeyId: String)
    case denied(AuthFailure)
}
