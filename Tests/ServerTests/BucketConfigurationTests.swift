// Buckets in the daemon's configuration: a directory or an S3 endpoint, credentials from the
// environment or a shared-credentials file (never inline), the spool settings, and the
// problems `config check` reports.
import Foundation
import Logging
@testable import Server
import Testing

@Suite struct BucketConfigurationTests {
    func decode(_ json: String) throws -> ServerConfiguration {
        try JSONDecoder().decode(ServerConfiguration.self, from: Data(json.utf8))
    }

    let base = #""region": "us-east-1", "account": "123456789012", "stateDirectory": "/var/lib/sc""#

    @Test func aBucketIsADirectoryOrAnS3Endpoint() throws {
        let configuration = try decode("""
            {\(base), "buckets": {
              "local-recordings": "rec",
              "also-local": {"directory": "/srv/rec"},
              "cloud": {"s3": {"endpoint": "http://127.0.0.1:9000", "bucket": "real-name", "keyPrefix": "ivs",
                               "credentials": {"file": "creds", "profile": "minio"}, "requestTimeoutSeconds": 5}}
            }, "spool": {"maxBytes": 104857600, "drainTimeoutSeconds": 10}}
            """).resolvingPaths(relativeTo: "/etc/sc")
        #expect(configuration.buckets["local-recordings"] == .directory("/etc/sc/rec"))
        #expect(configuration.buckets["also-local"] == .directory("/srv/rec"))
        guard case .s3(let s3)? = configuration.buckets["cloud"] else {
            Issue.record("cloud is an S3 bucket")
            return
        }
        #expect(s3.endpoint == "http://127.0.0.1:9000")
        #expect(s3.bucket == "real-name")
        #expect(s3.region == "us-east-1")
        #expect(s3.credentials == .file(path: "/etc/sc/creds", profile: "minio"))
        #expect(s3.requestTimeoutSeconds == 5)
        #expect(s3.maxAttempts == 3)
        #expect(configuration.spool.maxBytes == 104_857_600)
        #expect(configuration.spoolDirectory == "/var/lib/sc/spool")
        #expect(configuration.validate().isEmpty)
        #expect(configuration.buckets["cloud"]?.summary == "s3://real-name/ivs at http://127.0.0.1:9000")
    }

    @Test func secretsInTheConfigurationAreRefused() {
        #expect(throws: DecodingError.self) {
            _ = try decode("""
                {\(base), "buckets": {"cloud": {"s3": {"endpoint": "https://s3.amazonaws.com",
                  "accessKeyId": "AKIA", "secretAccessKey": "shh"}}}}
                """)
        }
    }

    @Test func problemsNameTheirKey() throws {
        let configuration = try decode("""
            {\(base), "buckets": {
              "cloud": {"s3": {"endpoint": "ftp://x", "region": "", "requestTimeoutSeconds": 0, "maxAttempts": 0}},
              "empty-dir": ""
            }, "spool": {"maxBytes": 10, "drainTimeoutSeconds": -1}}
            """)
        let problems = configuration.validate()
        for expected in ["buckets.cloud.s3.endpoint: ftp://x is not an http:// or https:// URL",
                         "buckets.cloud.s3.region: must not be empty",
                         "buckets.cloud.s3.requestTimeoutSeconds: must be positive",
                         "buckets.cloud.s3.maxAttempts: must be at least 1",
                         "buckets.empty-dir: the directory must not be empty",
                         "spool.maxBytes: must be at least 1048576",
                         "spool.drainTimeoutSeconds: must not be negative"] {
            #expect(problems.contains(expected), "\(expected) in \(problems)")
        }
    }

    @Test func credentialsFromTheEnvironment() throws {
        let credentials = ServerConfiguration.Credentials.environment
        let keys = try credentials.resolve(environment: ["AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret",
                                                          "AWS_SESSION_TOKEN": "token"])
        #expect(keys == .init(accessKeyId: "id", secretAccessKey: "secret", sessionToken: "token"))
        #expect(throws: ServerConfiguration.CredentialsError("AWS_SECRET_ACCESS_KEY is not set in the daemon's environment")) {
            _ = try credentials.resolve(environment: ["AWS_ACCESS_KEY_ID": "id"])
        }
    }

    @Test func credentialsFromASharedCredentialsFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("creds-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try """
            # written by aws configure
            [default]
            aws_access_key_id = AKIDEFAULT
            aws_secret_access_key = default-secret

            [profile minio]
            aws_access_key_id=minio-id
            aws_secret_access_key = minio/secret=with=equals
            """.write(to: file, atomically: true, encoding: .utf8)
        #expect(try ServerConfiguration.Credentials.file(path: file.path, profile: "minio").resolve(environment: [:])
                == .init(accessKeyId: "minio-id", secretAccessKey: "minio/secret=with=equals", sessionToken: nil))
        #expect(try ServerConfiguration.Credentials.file(path: file.path, profile: "default").resolve(environment: [:]).accessKeyId
                == "AKIDEFAULT")
        do {
            _ = try ServerConfiguration.Credentials.file(path: file.path, profile: "other").resolve(environment: [:])
            Issue.record("a missing profile is an error")
        } catch {
            #expect(error.description.contains("[other]"))
            #expect(!error.description.contains("default-secret") && !error.description.contains("AKIDEFAULT"),
                    "errors never show a key")
        }
    }

    @Test func theDaemonDoesNotStartWithoutTheCredentialsOfAnS3Bucket() async throws {
        let configuration = ServerConfiguration(stateDirectory: "/tmp/x",
                                                buckets: ["cloud": .s3(.init(endpoint: "http://127.0.0.1:9"))])
        #expect(configuration.availabilityWarnings(environment: [:]).contains {
            $0.hasPrefix("buckets.cloud.s3.credentials: AWS_ACCESS_KEY_ID is not set")
        })
        do {
            _ = try BucketService(configuration: configuration, environment: [:], logger: Logger(label: "test"))
            Issue.record("refused")
        } catch {
            #expect(error.description == "buckets.cloud.s3.credentials: AWS_ACCESS_KEY_ID is not set in the daemon's environment")
        }
        let service = try BucketService(configuration: configuration,
                                        environment: ["AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"],
                                        logger: Logger(label: "test"))
        #expect(service.isSpooled(bucket: "cloud"))
        #expect(service.storage(bucket: "cloud") != nil)
        await service.close()
    }
}
