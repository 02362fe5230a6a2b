// Pure pieces of the S3 backend: URL building, the XML answers, the retry schedule, and the
// signature against botocore's own S3 signer.
import Auth
import Foundation
@testable import Storage
import Testing

@Suite struct S3LocationTests {
    func configuration(_ endpoint: String, pathStyle: Bool? = nil, keyPrefix: String? = nil) -> S3StorageConfiguration {
        S3StorageConfiguration(endpoint: URL(string: endpoint)!, bucket: "media", region: "us-west-2",
                               accessKeyId: "AKID", secretAccessKey: "secret", pathStyle: pathStyle, keyPrefix: keyPrefix)
    }

    @Test func pathStyleOnCustomEndpointsVirtualHostsOnAWS() {
        let custom = configuration("http://127.0.0.1:9000")
        #expect(custom.pathStyle)
        let location = custom.location(objectKey: "stage/a b+c=d/ü.ts")
        #expect(location.host == "127.0.0.1:9000")
        #expect(location.path == "/media/stage/a%20b%2Bc%3Dd/%C3%BC.ts")
        #expect(location.url == "http://127.0.0.1:9000/media/stage/a%20b%2Bc%3Dd/%C3%BC.ts")
        #expect(custom.location(objectKey: nil).path == "/media")

        let aws = configuration("https://s3.us-west-2.amazonaws.com")
        #expect(!aws.pathStyle)
        #expect(aws.location(objectKey: "x/y.m3u8").url == "https://media.s3.us-west-2.amazonaws.com/x/y.m3u8")
        #expect(aws.location(objectKey: nil).path == "/")
        #expect(configuration("https://s3.amazonaws.com:443", pathStyle: true).location(objectKey: "k").url
                == "https://s3.amazonaws.com/media/k")
    }

    @Test func bucketURLOfTheComposeFlag() throws {
        let parsed = try #require(S3StorageConfiguration(bucketURL: URL(string: "http://127.0.0.1:9000/media/live/rec")!,
                                                         region: "us-east-1", accessKeyId: "A", secretAccessKey: "S"))
        #expect(parsed.endpoint.absoluteString == "http://127.0.0.1:9000")
        #expect(parsed.bucket == "media")
        #expect(parsed.keyPrefix == "live/rec")
        #expect(parsed.pathStyle)
        #expect(parsed.displayURL(forKey: "a/b.m3u8") == "s3://media/live/rec/a/b.m3u8")
        #expect(S3StorageConfiguration(bucketURL: URL(string: "http://127.0.0.1:9000/")!, region: "r",
                                       accessKeyId: "A", secretAccessKey: "S") == nil)
        #expect(S3StorageConfiguration(bucketURL: URL(string: "ftp://h/b")!, region: "r",
                                       accessKeyId: "A", secretAccessKey: "S") == nil)
    }

    @Test func endpointPathAndKeyPrefix() {
        let gateway = configuration("http://gw.local:8080/s3/", keyPrefix: "/recordings//live/")
        #expect(gateway.objectKeyPrefix == "recordings/live/")
        #expect(gateway.location(objectKey: gateway.objectKeyPrefix + "a.ts").path == "/s3/media/recordings/live/a.ts")
        #expect(configuration("http://h", keyPrefix: "").objectKeyPrefix == "")
        #expect(configuration("http://h").objectKeyPrefix == "")
    }
}

@Suite struct S3XMLTests {
    @Test func listPageKeysTokenAndEntities() throws {
        let xml = """
        <?xml version="1.0" encoding="UTF-8"?>
        <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>media</Name><Prefix>a/</Prefix>\
        <KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>\
        <Contents><Key>a/1 &amp; 2.ts</Key><Size>3</Size></Contents>
        <Contents>
          <Key>a/&lt;x&gt;&#233;&#x4E2D;.json</Key><ETag>&quot;e&quot;</ETag>
        </Contents>
        <NextContinuationToken>1/abc+=</NextContinuationToken></ListBucketResult>
        """
        let page = try #require(S3XML.listPage(xml))
        #expect(page.keys == ["a/1 & 2.ts", "a/<x>é中.json"])
        #expect(page.isTruncated)
        #expect(page.nextContinuationToken == "1/abc+=")

        let last = try #require(S3XML.listPage("<ListBucketResult><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>"))
        #expect(last == S3ListPage(keys: [], isTruncated: false, nextContinuationToken: nil))
        #expect(S3XML.listPage("<Error><Code>AccessDenied</Code></Error>") == nil)
    }

    @Test func errorBody() {
        let body = "<?xml version=\"1.0\"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
        #expect(S3XML.error(body) == S3ErrorBody(code: "SlowDown", message: "Please reduce your request rate."))
        #expect(S3XML.error("") == nil)
        #expect(S3XML.error("<html>502 Bad Gateway</html>") == nil)
    }
}

@Suite struct S3RetryPolicyTests {
    let policy = S3RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(100), maximumDelay: .seconds(1))

    @Test func backoffDoublesWithJitterAndIsBounded() {
        #expect(policy.delay(afterAttempt: 1, random: 0) == .milliseconds(50))
        #expect(policy.delay(afterAttempt: 1, random: 1) == .milliseconds(100))
        #expect(policy.delay(afterAttempt: 2, random: 0) == .milliseconds(100))
        #expect(policy.delay(afterAttempt: 3, random: 0.5) == .milliseconds(300))
        #expect(policy.delay(afterAttempt: 10, random: 1) == .seconds(1))
        #expect(policy.delay(afterAttempt: 1000, random: 0) == .milliseconds(500))
    }

    @Test func retryableStatuses() {
        #expect([500, 502, 503, 504, 429].allSatisfy(S3RetryPolicy.isRetryable(status:)))
        #expect(![200, 204, 301, 400, 403, 404, 409].contains(where: S3RetryPolicy.isRetryable(status:)))
    }
}

/// Our S3 signature compared with botocore's `S3SigV4Auth` (boto3, AWS CLI) byte for byte,
/// for keys that need encoding, a session token, query strings and an empty body.
@Suite struct S3SigningTests {
    struct Case: Encodable {
        var method: String
        var url: String
        var headers: [[String]]
        var body_b64: String
        var time = "20261122T051219Z"
        var region = "eu-central-1"
        var akid = "AKIDEXAMPLE"
        var secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
        var token: String?
    }

    struct Signed: Decodable {
        var authorization: String
        var content_sha256: String
        var amz_date: String
    }

    @Test func matchesBotocore() async throws {
        let time = try #require(SigV4Time(amzDate: "20261122T051219Z"))
        let storages = [
            S3Storage(configuration: S3StorageConfiguration(
                endpoint: URL(string: "http://127.0.0.1:9000")!, bucket: "media", region: "eu-central-1",
                accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                sessionToken: "FwoGZXIvYXdzEBYaD+token/=="), httpClient: MotoServer.httpClient),
            S3Storage(configuration: S3StorageConfiguration(
                endpoint: URL(string: "https://s3.eu-central-1.amazonaws.com")!, bucket: "media", region: "eu-central-1",
                accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
                      httpClient: MotoServer.httpClient),
        ]
        typealias Request = (method: String, key: String?, query: [(name: String, value: String)],
                             headers: [(name: String, value: String)], body: [UInt8])
        let requests: [Request] = [
            ("PUT", "stage/comp/a b+c=d/ü~(1).ts", [], [(name: "Content-Type", value: "video/mp2t")], (0...255).map { UInt8($0) }),
            ("GET", "stage/x.json", [], [], []),
            ("HEAD", "stage/x.json", [], [], []),
            ("GET", nil, [(name: "list-type", value: "2"), (name: "prefix", value: SigV4Path.encodeQueryValue("a b/c+")),
                          (name: "continuation-token", value: SigV4Path.encodeQueryValue("1/x+y=="))], [], []),
        ]
        var cases: [Case] = []
        var ours: [S3Storage.PreparedRequest] = []
        for storage in storages {
            for request in requests {
                let prepared = storage.prepare(request.method, objectKey: request.key, query: request.query,
                                               headers: request.headers, body: request.body, at: time)
                ours.append(prepared)
                // botocore gets the URL we send and the headers we set before signing.
                cases.append(Case(method: request.method, url: prepared.url,
                                  headers: request.headers.map { [$0.name, $0.value] },
                                  body_b64: Data(request.body).base64EncodedString(),
                                  token: storage.configuration.sessionToken))
            }
        }
        let output = try await runTool(["python3", Paths.testsFolder.appendingPathComponent("botocore_s3_sign.py").path],
                                       input: try JSONEncoder().encode(cases))
        let reference = try JSONDecoder().decode([Signed].self, from: output)
        try #require(reference.count == ours.count)
        for (index, signed) in reference.enumerated() {
            func header(_ name: String) -> String? { ours[index].headers.first { $0.name.lowercased() == name }?.value }
            #expect(header("authorization") == signed.authorization, "case \(index): \(cases[index].method) \(cases[index].url)")
            #expect(header("x-amz-content-sha256") == signed.content_sha256)
            #expect(header("x-amz-date") == signed.amz_date)
        }
    }
}
