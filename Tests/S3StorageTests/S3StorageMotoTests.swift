// S3Storage against a real S3 implementation (moto_server on loopback) that checks every
// signature. Each test works under its own key prefix in the shared bucket.
import Foundation
@testable import Storage
import Testing

@Suite struct S3StorageMotoTests {
    @Test func binaryRoundTripAndExists() async throws {
        let storage = try await MotoServer.storage()
        var bytes = [UInt8](repeating: 0, count: 300_000)
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: index &* 2_654_435_761 >> 13) }
        bytes.replaceSubrange(0..<256, with: (0...255).map { UInt8($0) })
        let data = Data(bytes)
        let key = "stage/comp/dest/composite/media/hls/720p30-x/0 1.ts"
        #expect(await storage.exists(key: key) == false)
        try await storage.put(data, key: key)
        #expect(try await storage.get(key: key) == data)
        #expect(await storage.exists(key: key))
        #expect(await storage.exists(key: "stage/comp") == false)
    }

    @Test func contentTypeIsStored() async throws {
        let storage = try await MotoServer.storage()
        try await storage.put(text: "#EXTM3U\n", key: "media/playlist.m3u8")
        try await storage.put(Data([0xFF, 0xD8, 0xFF]), key: "thumbs/thumb.jpg")
        try await storage.put(Data("x".utf8), key: "plain.bin", contentType: "application/x-custom")
        for (key, type) in [("media/playlist.m3u8", "application/vnd.apple.mpegurl"), ("thumbs/thumb.jpg", "image/jpeg"),
                            ("plain.bin", "application/x-custom")] {
            let response = try await storage.send(.HEAD, key: key, objectKey: storage.configuration.objectKeyPrefix + key)
            #expect(response.status == 200)
            #expect(response.headers.first { $0.name.lowercased() == "content-type" }?.value == type, "\(key)")
        }
    }

    @Test func listFollowsContinuationTokensAndHonoursPrefix() async throws {
        let storage = try await MotoServer.storage(listPageSize: 4, open: true)
        let segments = (0..<23).map { String(format: "rec/media/seg%05d.ts", $0) }
        let others = ["rec/events/recording-started.json", "record.json", "rec/media2/x.ts"]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for key in segments + others {
                group.addTask { try await storage.put(Data(key.utf8), key: key) }
            }
            try await group.waitForAll()
        }
        #expect(try await storage.list(prefix: "rec/media/") == segments)
        #expect(try await storage.list(prefix: "rec/media") == segments + ["rec/media2/x.ts"])
        #expect(try await storage.list(prefix: "") == (segments + others).sorted())
        #expect(try await storage.list(prefix: "nothing/") == [])
    }

    @Test func overwriteReplacesTheObject() async throws {
        let storage = try await MotoServer.storage(open: true)
        try await storage.put(text: "#EXT-X-PLAYLIST-TYPE:EVENT\n", key: "p/playlist.m3u8")
        try await storage.put(text: "#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-ENDLIST\n", key: "p/playlist.m3u8")
        #expect(try await storage.get(key: "p/playlist.m3u8") == Data("#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-ENDLIST\n".utf8))
        #expect(try await storage.list(prefix: "p/") == ["p/playlist.m3u8"])
    }

    @Test func missingObjectIsNotFound() async throws {
        let storage = try await MotoServer.storage()
        await #expect(throws: StorageError.notFound(key: "no/such.json")) { try await storage.get(key: "no/such.json") }
    }

    @Test func wrongSecretIsAccessDeniedNamingKeyAndCode() async throws {
        let storage = try await MotoServer.storage(prefix: "denied", secret: "not-the-secret")
        for operation in ["put", "get"] {
            let error = await #expect(throws: StorageError.self) {
                if operation == "put" { try await storage.put(text: "{}", key: "events/x.json") }
                else { _ = try await storage.get(key: "events/x.json") }
            }
            guard case .accessDenied(let key, let message) = error else {
                Issue.record("expected accessDenied, got \(String(describing: error))")
                continue
            }
            #expect(key == "events/x.json")
            #expect(message.contains("SignatureDoesNotMatch"), "\(message)")
            #expect(message.contains("denied/events/x.json"), "\(message)")
        }
        await #expect(throws: StorageError.self) { try await storage.list(prefix: "") }
        #expect(await storage.exists(key: "events/x.json") == false)

        let server = try await MotoServer.shared()
        let unknown = S3Storage(configuration: S3StorageConfiguration(
            endpoint: server.endpoint, bucket: server.bucket, region: server.region,
            accessKeyId: "AKIAUNKNOWN000000000", secretAccessKey: "x"), httpClient: MotoServer.httpClient)
        let error = await #expect(throws: StorageError.self) { try await unknown.put(text: "{}", key: "a.json") }
        guard case .accessDenied(_, let message) = error else {
            Issue.record("expected accessDenied, got \(String(describing: error))")
            return
        }
        #expect(message.contains("InvalidAccessKeyId"), "\(message)")
    }

    @Test func missingBucketIsReportedAsSuch() async throws {
        let server = try await MotoServer.shared()
        let storage = S3Storage(configuration: S3StorageConfiguration(
            endpoint: server.endpoint, bucket: "no-such-bucket-here", region: server.region,
            accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey), httpClient: MotoServer.httpClient)
        let error = await #expect(throws: StorageError.self) { try await storage.put(text: "{}", key: "a.json") }
        guard case .ioFailure(let key, let message) = error else {
            Issue.record("expected ioFailure, got \(String(describing: error))")
            return
        }
        #expect(key == "a.json")
        #expect(message.contains("NoSuchBucket") && message.contains("no-such-bucket-here"), "\(message)")
    }
}
