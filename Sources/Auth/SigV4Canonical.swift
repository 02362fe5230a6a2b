// The pieces of a Signature Version 4 signature, as botocore builds them for rest-json
// services (botocore/auth.py `SigV4Auth`). Pure functions, so each rule has an exact test.
//
// The one rule that surprises: for every service but S3 the canonical URI is the path
// *as sent* (already percent-encoded by the SDK) encoded once more. botocore serializes
// `/tags/{resourceArn}` as `/tags/arn%3Aaws%3Aivs...%2Fid`, then signs
// `/tags/arn%253Aaws%253Aivs...%252Fid`. So the server must sign the raw path, never the
// decoded one.

internal import Crypto

/// Canonical request, string to sign and signature (SigV4, HMAC-SHA256).
public enum SigV4Canonical {
    public static let algorithm = "AWS4-HMAC-SHA256"
    public static let terminator = "aws4_request"
    /// SHA-256 of the empty body.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// The canonical URI of a raw (percent-encoded) path: dot segments and repeated slashes
    /// removed, then every byte outside `A-Z a-z 0-9 - . _ ~ /` percent-encoded (so `%`
    /// becomes `%25`: the double encoding of non-S3 services).
    public static func canonicalURI(rawPath: String) -> String {
        let normalized = removeDotSegments(rawPath.isEmpty ? "/" : rawPath)
        return percentEncode(normalized, keepSlash: true)
    }

    /// RFC 3986 §5.2.4 plus the removal of empty segments, as botocore's `remove_dot_segments`.
    public static func removeDotSegments(_ path: String) -> String {
        guard !path.isEmpty else { return "" }
        var output: [Substring] = []
        for segment in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch segment {
            case ".": continue
            case "..": if !output.isEmpty { output.removeLast() }
            default: output.append(segment)
            }
        }
        let first = path.hasPrefix("/") ? "/" : ""
        let last = path.hasSuffix("/") && !output.isEmpty ? "/" : ""
        return first + output.joined(separator: "/") + last
    }

    /// Query items (raw, as sent) in canonical form: each name and value decoded then
    /// encoded with the unreserved set, sorted by name then value, joined with `&`.
    public static func canonicalQueryString(_ items: [(name: String, value: String)]) -> String {
        let encoded = items.map { item in
            (percentEncode(percentDecode(item.name), keepSlash: false),
             percentEncode(percentDecode(item.value), keepSlash: false))
        }
        let sorted = encoded.sorted { lhs, rhs in
            if lhs.0 != rhs.0 { return lhs.0.utf8.lexicographicallyPrecedes(rhs.0.utf8) }
            return lhs.1.utf8.lexicographicallyPrecedes(rhs.1.utf8)
        }
        return sorted.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    }

    /// `name:value` lines for the signed headers, in the given order. A header that appears
    /// more than once has its values joined with `,`; each value has its whitespace
    /// trimmed and runs of whitespace collapsed to one space.
    public static func canonicalHeaders(signedHeaders: [String],
                                        values: (String) -> [String]) throws(AuthFailure) -> String {
        var lines: [String] = []
        for name in signedHeaders {
            let found = values(name)
            if found.isEmpty { throw .signedHeaderMissing(name) }
            lines.append("\(name):" + found.map(trimAll).joined(separator: ","))
        }
        return lines.joined(separator: "\n")
    }

    /// Whitespace trimmed at both ends, inner runs collapsed to one space.
    public static func trimAll(_ value: String) -> String {
        value.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }

    /// The six-part canonical request: method, URI, query, headers (each line ended with
    /// a newline, then a blank line), signed header names, payload hash.
    public static func canonicalRequest(method: String, canonicalURI: String, canonicalQuery: String,
                                        canonicalHeaders: String, signedHeaders: [String],
                                        payloadHash: String) -> String {
        [method.uppercased(), canonicalURI, canonicalQuery, canonicalHeaders + "\n",
         signedHeaders.joined(separator: ";"), payloadHash].joined(separator: "\n")
    }

    /// `date/region/service/aws4_request`, date as `yyyyMMdd`.
    public static func credentialScope(date: String, region: String, service: String) -> String {
        "\(date)/\(region)/\(service)/\(terminator)"
    }

    public static func stringToSign(timestamp: String, scope: String, canonicalRequest: String) -> String {
        [algorithm, timestamp, scope, sha256Hex(Array(canonicalRequest.utf8))].joined(separator: "\n")
    }

    /// Hex HMAC-SHA256 of the string to sign, keyed by the derived signing key.
    public static func signature(secret: String, date: String, region: String, service: String,
                                 stringToSign: String) -> String {
        var key = SymmetricKey(data: Array("AWS4\(secret)".utf8))
        for part in [date, region, service, terminator] {
            key = SymmetricKey(data: hmac(key, part))
        }
        return hex(hmac(key, stringToSign))
    }

    public static func sha256Hex(_ bytes: [UInt8]) -> String {
        hex(Array(SHA256.hash(data: bytes)))
    }

    /// Equality of two strings' bytes in time that depends only on their lengths.
    public static func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
        let a = Array(lhs.utf8), b = Array(rhs.utf8)
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    // MARK: - Encoding

    /// Percent-encodes the UTF-8 bytes of `text` outside the unreserved set (and `/` when
    /// `keepSlash`), upper-case hex, as Python's `quote(text, safe='/~')` / `safe='-_.~'`.
    public static func percentEncode(_ text: String, keepSlash: Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) || (keepSlash && byte == UInt8(ascii: "/")) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hexDigit(byte >> 4, upper: true))
                out.append(hexDigit(byte & 0x0F, upper: true))
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes `%XX` escapes (not `+`); a malformed escape is kept as it is.
    static func percentDecode(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func hexDigit(_ nibble: UInt8, upper: Bool) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : (upper ? UInt8(ascii: "A") : UInt8(ascii: "a")) + nibble - 10
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(hexDigit(byte >> 4, upper: false))
            out.append(hexDigit(byte & 0x0F, upper: false))
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hmac(_ key: SymmetricKey, _ message: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array(message.utf8), using: key))
    }
}
