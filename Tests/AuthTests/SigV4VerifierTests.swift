import Auth
import Foundation
import Testing

/// Every request botocore signs for these tests, indexed by name (signed once, lazily).
private let signed: [String: BotocoreSigned] = {
    let names = Array(botocoreCases.keys)
    let results = (try? BotocoreFixture.sign(names.map { botocoreCases[$0]! })) ?? []
    return Dictionary(uniqueKeysWithValues: zip(names, results))
}()

private let botocoreCases: [String: BotocoreCase] = [
    "StartComposition": BotocoreCase(kind: .client, operation: "StartComposition", params: [
        "stageArn": .string(BotocoreFixture.stageArn),
        "idempotencyToken": .string("token-1"),
        "destinations": .array([.object(["channel": .object([
            "channelArn": .string("arn:aws:ivs:us-east-1:123456789012:channel/AbCdEfGhIjKl"),
            "encoderConfigurationArn": .string("arn:aws:ivs:us-east-1:123456789012:encoder-configuration/AbCdEfGhIjKl"),
        ])])]),
    ]),
    "ListTagsForResource": BotocoreCase(kind: .client, operation: "ListTagsForResource",
                                        params: ["resourceArn": .string(BotocoreFixture.stageArn)]),
    "UntagResource": BotocoreCase(kind: .client, operation: "UntagResource", params: [
        "resourceArn": .string(BotocoreFixture.stageArn),
        "tagKeys": .array([.string("team"), .string("cost center"), .string("a+b/c")]),
    ]),
    "TagResource": BotocoreCase(kind: .client, operation: "TagResource", params: [
        "resourceArn": .string(BotocoreFixture.stageArn),
        "tags": .object(["team": .string("video ops")]),
    ]),
    "ListCompositions": BotocoreCase(kind: .client, operation: "ListCompositions",
                                     params: ["maxResults": .number(10)]),
    "contentHash": BotocoreCase(kind: .raw, method: "POST", url: "http://127.0.0.1:8086/GetComposition",
                                headers: ["Content-Type": "application/json",
                                          "X-Amz-Content-SHA256": "d391a26a26dbef63075cbfd7904a5962ec44d178173557354f1db0b094bedffd"],
                                body: #"{"arn":"x"}"#),
    "dateHeader": BotocoreCase(kind: .raw, method: "POST", url: "http://127.0.0.1:8086/ListStages",
                               headers: ["Content-Type": "application/json", "Date": "now"], body: "{}"),
    "ownSigner": BotocoreCase(kind: .raw, method: "POST", url: "http://127.0.0.1:8086/ListStages?b=2&a=1",
                              headers: ["Content-Type": "application/json",
                                        "X-Custom": "  two   spaces  "], body: "{}"),
]

private func verifier(secret: String = BotocoreFixture.secret, region: String = BotocoreFixture.region,
                      service: String = "ivs", now: Date = BotocoreFixture.signingDate) -> SigV4Verifier {
    SigV4Verifier(credentials: [BotocoreFixture.accessKeyId: secret], region: region, service: service,
                  now: { now })
}

private func request(_ name: String) throws -> BotocoreSigned {
    try #require(signed[name], "botocore could not sign '\(name)' (is python3 with botocore installed?)")
}

@Suite("SigV4 against botocore (the AWS CLI's signer)")
struct BotocoreSignedRequestTests {
    static let clientOperations = ["StartComposition", "ListTagsForResource", "UntagResource",
                                   "TagResource", "ListCompositions"]

    @Test("our canonical request is botocore's, text for text", arguments: clientOperations)
    func canonicalRequestMatches(operation: String) throws {
        let botocore = try request(operation)
        let received = botocore.received
        let authorization = try SigV4Authorization(parsing: received.headerValues("authorization")[0])
        let headers = try SigV4Canonical.canonicalHeaders(signedHeaders: authorization.signedHeaders,
                                                          values: received.headerValues)
        let ours = SigV4Canonical.canonicalRequest(
            method: received.method,
            canonicalURI: SigV4Canonical.canonicalURI(rawPath: received.path),
            canonicalQuery: SigV4Canonical.canonicalQueryString(received.query),
            canonicalHeaders: headers, signedHeaders: authorization.signedHeaders,
            payloadHash: SigV4Canonical.sha256Hex(botocore.body))
        #expect(ours == botocore.canonical_request)
    }

    @Test("a correctly signed request is allowed", arguments: clientOperations + ["contentHash", "dateHeader"])
    func allowed(name: String) throws {
        let botocore = try request(name)
        #expect(verifier().verify(botocore.received) == .allowed(accessKeyId: BotocoreFixture.accessKeyId))
    }

    @Test("tags paths are signed double-encoded")
    func tagsPathDoubleEncoded() throws {
        let botocore = try request("ListTagsForResource")
        #expect(botocore.received.path == "/tags/arn%3Aaws%3Aivs%3Aus-east-1%3A123456789012%3Astage%2FAbCdEfGhIjKl")
        #expect(botocore.canonical_request.split(separator: "\n")[1]
            == "/tags/arn%253Aaws%253Aivs%253Aus-east-1%253A123456789012%253Astage%252FAbCdEfGhIjKl")
    }

    @Test("wrong secret: signature mismatch")
    func wrongSecret() throws {
        let result = verifier(secret: "not-the-secret").verify(try request("StartComposition").received)
        #expect(result == .denied(.signatureMismatch))
        #expect(result != .allowed(accessKeyId: BotocoreFixture.accessKeyId))
    }

    @Test("unknown access key")
    func unknownKey() throws {
        let other = SigV4Verifier(credentials: ["AKIDOTHER": BotocoreFixture.secret], region: BotocoreFixture.region,
                                  now: { BotocoreFixture.signingDate })
        #expect(other.verify(try request("StartComposition").received)
            == .denied(.unknownAccessKey(BotocoreFixture.accessKeyId)))
    }

    @Test("16 minutes either way is too skewed; 14 is not")
    func clockSkew() throws {
        let received = try request("StartComposition").received
        let minute: TimeInterval = 60
        for offset in [16 * minute, -16 * minute] {
            #expect(verifier(now: BotocoreFixture.signingDate + offset).verify(received)
                == .denied(.requestTimeTooSkewed))
        }
        for offset in [14 * minute, -14 * minute] {
            #expect(verifier(now: BotocoreFixture.signingDate + offset).verify(received)
                == .allowed(accessKeyId: BotocoreFixture.accessKeyId))
        }
    }

    @Test("no Authorization header")
    func unsigned() throws {
        var received = try request("StartComposition").received
        received.headers.removeAll { $0.name.lowercased() == "authorization" }
        #expect(verifier().verify(received) == .denied(.missingAuthorization))
    }

    @Test("a tampered body breaks the signature")
    func tamperedBody() throws {
        var received = try request("StartComposition").received
        guard case .bytes(var body) = received.payload else { Issue.record("no body"); return }
        body[body.count / 2] ^= 0x01
        received.payload = .bytes(body)
        #expect(verifier().verify(received) == .denied(.signatureMismatch))
    }

    @Test("a tampered body under x-amz-content-sha256 is a payload hash mismatch")
    func tamperedBodyWithContentHash() throws {
        var received = try request("contentHash").received
        received.payload = .bytes(Array(#"{"arn":"y"}"#.utf8))
        #expect(verifier().verify(received) == .denied(.payloadHashMismatch))
        received.payload = .sha256Hex(SigV4Canonical.sha256Hex(Array(#"{"arn":"x"}"#.utf8)))
        #expect(verifier().verify(received) == .allowed(accessKeyId: BotocoreFixture.accessKeyId))
    }

    @Test("UNSIGNED-PAYLOAD is refused")
    func unsignedPayload() throws {
        var received = try request("StartComposition").received
        received.headers.append((name: "x-amz-content-sha256", value: "UNSIGNED-PAYLOAD"))
        #expect(verifier().verify(received) == .denied(.unsignedPayload))
    }

    @Test("a tampered path, query, method or signed header breaks the signature")
    func tampered() throws {
        let original = try request("UntagResource").received
        var path = original
        path.path = path.path.replacingOccurrences(of: "AbCdEfGhIjKl", with: "ZzCdEfGhIjKl")
        var decodedPath = original
        decodedPath.path = decodedPath.path.removingPercentEncoding!
        var query = original
        query.query.removeLast()
        var method = original
        method.method = "POST"
        var host = original
        host.headers[0].value = "127.0.0.1:9999"
        for tampered in [path, decodedPath, query, method, host] {
            #expect(verifier().verify(tampered) == .denied(.signatureMismatch))
        }
        #expect(verifier().verify(original) == .allowed(accessKeyId: BotocoreFixture.accessKeyId))
    }

    @Test("the credential scope must name our region and service")
    func scope() throws {
        let received = try request("StartComposition").received
        guard case .denied(.credentialScopeMismatch) = verifier(region: "eu-west-1").verify(received) else {
            Issue.record("region not checked"); return
        }
        guard case .denied(.credentialScopeMismatch) = verifier(service: "ivsrealtime").verify(received) else {
            Issue.record("service not checked"); return
        }
    }

    @Test("our signer produces botocore's Authorization")
    func ownSignerMatchesBotocore() throws {
        let botocore = try request("ownSigner")
        var unsignedRequest = botocore.received
        unsignedRequest.headers.removeAll { ["authorization", "x-amz-date"].contains($0.name.lowercased()) }
        let signer = SigV4Signer(accessKeyId: BotocoreFixture.accessKeyId, secret: BotocoreFixture.secret,
                                 region: BotocoreFixture.region)
        let ours = signer.sign(unsignedRequest, at: SigV4Time(secondsSince1970: 1_795_324_339), body: botocore.body)
        #expect(ours.headerValues("authorization") == botocore.received.headerValues("authorization"))
        #expect(verifier().verify(ours) == .allowed(accessKeyId: BotocoreFixture.accessKeyId))
    }
}

@Suite("SigV4 verifier rules")
struct SigV4VerifierRuleTests {
    let signer = SigV4Signer(accessKeyId: BotocoreFixture.accessKeyId, secret: BotocoreFixture.secret,
                             region: BotocoreFixture.region)
    let time = SigV4Time(secondsSince1970: 1_795_324_339)
    let body = Array(#"{"stageArn":"arn"}"#.utf8)

    func unsignedRequest() -> SignedRequest {
        SignedRequest(method: "POST", target: "/StartComposition",
                      headers: [(name: "Host", value: "127.0.0.1:8086"),
                                (name: "Content-Type", value: "application/json")],
                      body: body)
    }

    @Test("host must be signed")
    func hostNotSigned() {
        let signed = signer.sign(unsignedRequest(), at: time, body: body,
                                 signedHeaderNames: ["content-type", "x-amz-date"])
        #expect(verifier().verify(signed) == .denied(.hostNotSigned))
    }

    @Test("a signed header must be present")
    func signedHeaderMissing() {
        var signed = signer.sign(unsignedRequest(), at: time, body: body)
        signed.headers.removeAll { $0.name == "Content-Type" }
        #expect(verifier().verify(signed) == .denied(.signedHeaderMissing("content-type")))
    }

    @Test("the scope date must be the request date")
    func scopeDate() throws {
        let lateEvening = try #require(SigV4Time(amzDate: "20261122T235959Z"))
        let nextDay = try #require(SigV4Time(amzDate: "20261123T000001Z"))
        func verifier(at time: SigV4Time) -> SigV4Verifier {
            SigV4Verifier(credentials: [BotocoreFixture.accessKeyId: BotocoreFixture.secret],
                          region: BotocoreFixture.region,
                          now: { Date(timeIntervalSince1970: TimeInterval(time.secondsSince1970)) })
        }
        var signed = signer.sign(unsignedRequest(), at: lateEvening, body: body)
        #expect(verifier(at: lateEvening).verify(signed) == .allowed(accessKeyId: BotocoreFixture.accessKeyId))
        let index = try #require(signed.headers.firstIndex { $0.name == "X-Amz-Date" })
        signed.headers[index].value = "20261122T235958Z"
        #expect(verifier(at: lateEvening).verify(signed) == .denied(.signatureMismatch))
        signed.headers[index].value = nextDay.amzDate
        guard case .denied(.credentialScopeMismatch) = verifier(at: nextDay).verify(signed) else {
            Issue.record("scope date not checked"); return
        }
    }

    @Test("malformed Authorization headers", arguments: [
        "AWS4-HMAC-SHA256",
        "AWS4-HMAC-SHA256 Credential=AKID/20261122/us-east-1/ivs/aws4_request, SignedHeaders=host",
        "AWS4-HMAC-SHA256 Credential=AKID/20261122/us-east-1/ivs, SignedHeaders=host, Signature=" + String(repeating: "0", count: 64),
        "AWS4-HMAC-SHA256 Credential=AKID/20261122/us-east-1/ivs/aws4_request, SignedHeaders=Host, Signature=" + String(repeating: "0", count: 64),
        "AWS4-HMAC-SHA256 Credential=AKID/20261122/us-east-1/ivs/aws4_request, SignedHeaders=host, Signature=abc",
    ])
    func malformed(header: String) {
        var request = unsignedRequest()
        request.headers.append((name: "Authorization", value: header))
        request.headers.append((name: "X-Amz-Date", value: time.amzDate))
        guard case .denied(.malformedAuthorization) = verifier().verify(request) else {
            Issue.record("accepted \(header)"); return
        }
    }

    @Test("other algorithms are refused")
    func otherAlgorithm() {
        var request = unsignedRequest()
        request.headers.append((name: "Authorization", value: "AWS AKID:signature"))
        #expect(verifier().verify(request) == .denied(.unsupportedAlgorithm("AWS")))
    }

    @Test("no date header")
    func noDate() {
        var signed = signer.sign(unsignedRequest(), at: time, body: body, signedHeaderNames: ["content-type", "host"])
        signed.headers.removeAll { $0.name == "X-Amz-Date" }
        #expect(verifier().verify(signed) == .denied(.missingDate))
    }

    @Test("a flipped signature digit is a mismatch")
    func flippedSignature() {
        var signed = signer.sign(unsignedRequest(), at: time, body: body)
        let index = signed.headers.firstIndex { $0.name == "Authorization" }!
        var value = signed.headers[index].value
        let last = value.removeLast()
        value.append(last == "0" ? "1" : "0")
        signed.headers[index].value = value
        #expect(verifier().verify(signed) == .denied(.signatureMismatch))
    }
}

@Suite("SigV4 canonical form (exact vectors)")
struct SigV4CanonicalTests {
    @Test("canonical URI", arguments: [
        ("", "/"),
        ("/", "/"),
        ("/StartComposition", "/StartComposition"),
        ("/tags/arn%3Aaws%3Aivs%3Aus-east-1%3A123%3Astage%2Fabc", "/tags/arn%253Aaws%253Aivs%253Aus-east-1%253A123%253Astage%252Fabc"),
        ("/a/./b/../c//d/", "/a/c/d/"),
        ("/a b/é", "/a%20b/%C3%A9"),
        ("/-._~!*'()", "/-._~%21%2A%27%28%29"),
        ("/..", "/"),
    ])
    func canonicalURI(raw: String, expected: String) {
        #expect(SigV4Canonical.canonicalURI(rawPath: raw) == expected)
    }

    @Test("canonical query string", arguments: [
        ("", ""),
        ("b=2&a=1&a=0", "a=0&a=1&b=2"),
        ("flag", "flag="),
        ("tagKeys=a%20b&tagKeys=a+b", "tagKeys=a%20b&tagKeys=a%2Bb"),
        ("k=%3a%2F", "k=%3A%2F"),
        ("Z=1&a=1&_=1", "Z=1&_=1&a=1"),
        ("k=v=w", "k=v%3Dw"),
    ])
    func canonicalQuery(raw: String, expected: String) {
        #expect(SigV4Canonical.canonicalQueryString(SignedRequest.split(target: "/?" + raw).query) == expected)
    }

    @Test("header values: trimmed, runs of spaces collapsed, repeats joined with commas")
    func headers() throws {
        let request = SignedRequest(method: "GET", path: "/", headers: [
            (name: "My-Header1", value: "    a   b   c  "),
            (name: "Host", value: "example.com"),
            (name: "my-header1", value: "\"a   b\""),
        ], payload: .bytes([]))
        let text = try SigV4Canonical.canonicalHeaders(signedHeaders: ["host", "my-header1"],
                                                       values: request.headerValues)
        #expect(text == "host:example.com\nmy-header1:a b c,\"a b\"")
    }

    /// The IAM `ListUsers` example from the SigV4 documentation.
    @Test("the documentation's ListUsers example, from canonical request to signature")
    func documentationExample() throws {
        let request = SignedRequest(method: "GET", target: "/?Action=ListUsers&Version=2010-05-08", headers: [
            (name: "Host", value: "iam.amazonaws.com"),
            (name: "Content-Type", value: "application/x-www-form-urlencoded; charset=utf-8"),
            (name: "X-Amz-Date", value: "20150830T123600Z"),
        ], body: [])
        let names = ["content-type", "host", "x-amz-date"]
        let canonical = SigV4Canonical.canonicalRequest(
            method: "GET", canonicalURI: SigV4Canonical.canonicalURI(rawPath: request.path),
            canonicalQuery: SigV4Canonical.canonicalQueryString(request.query),
            canonicalHeaders: try SigV4Canonical.canonicalHeaders(signedHeaders: names, values: request.headerValues),
            signedHeaders: names, payloadHash: SigV4Canonical.emptyPayloadHash)
        #expect(canonical == """
            GET
            /
            Action=ListUsers&Version=2010-05-08
            content-type:application/x-www-form-urlencoded; charset=utf-8
            host:iam.amazonaws.com
            x-amz-date:20150830T123600Z

            content-type;host;x-amz-date
            e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
            """)
        #expect(SigV4Canonical.sha256Hex(Array(canonical.utf8))
            == "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59")
        let scope = SigV4Canonical.credentialScope(date: "20150830", region: "us-east-1", service: "iam")
        let stringToSign = SigV4Canonical.stringToSign(timestamp: "20150830T123600Z", scope: scope,
                                                       canonicalRequest: canonical)
        #expect(SigV4Canonical.signature(secret: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", date: "20150830",
                                         region: "us-east-1", service: "iam", stringToSign: stringToSign)
            == "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7")

        let iam = SigV4Verifier(credentials: ["AKIDEXAMPLE": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"],
                                region: "us-east-1", service: "iam",
                                now: { Date(timeIntervalSince1970: 1_440_938_160) })
        var signed = request
        signed.headers.append((name: "Authorization", value: "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"))
        #expect(iam.verify(signed) == .allowed(accessKeyId: "AKIDEXAMPLE"))
    }

    @Test("request times")
    func times() throws {
        let amz = try #require(SigV4Time(amzDate: "20150830T123600Z"))
        #expect(amz.secondsSince1970 == 1_440_938_160)
        #expect(amz.amzDate == "20150830T123600Z")
        #expect(amz.scopeDate == "20150830")
        #expect(SigV4Time(httpDate: "Sun, 30 Aug 2015 12:36:00 GMT") == amz)
        #expect(SigV4Time(httpDate: "Sun, 30 Aug 2015 12:36:00 -0000") == amz)
        #expect(SigV4Time(httpDate: "Sun, 30 Aug 2015 12:36:00 +0200") == nil)
        #expect(SigV4Time(secondsSince1970: 951_782_400).amzDate == "20000229T000000Z")
        for bad in ["20150830T1236Z", "2015083OT123600Z", "20151330T123600Z", "20150830 123600Z"] {
            #expect(SigV4Time(amzDate: bad) == nil)
        }
        #expect(SigV4Time(httpDate: "Sun, 30 Foo 2015 12:36:00 GMT") == nil)
    }

    @Test("constant-time comparison")
    func constantTime() {
        #expect(SigV4Canonical.constantTimeEqual("abc", "abc"))
        #expect(!SigV4Canonical.constantTimeEqual("abc", "abd"))
        #expect(!SigV4Canonical.constantTimeEqual("abc", "abcd"))
    }
}
