// What a model-driven conformance run found (#42), each pinned in-process on the router test
// client: a storage configuration named for participant recording must exist, responses fill
// the model's documented defaults, a deleted stage leaves no ingest configuration pointing at
// it, every answer has an `x-amzn-RequestId`, and a request NIO's parser refuses is still
// answered in IVS's error shape. (An idempotency token naming one request: CompositionManagerTests.)
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTPTypes
@testable import Server
import XCTest

final class ModelDiscrepancyTests: XCTestCase {
    static let errorType = HTTPField.Name("x-amzn-ErrorType")!
    static let requestId = HTTPField.Name("x-amzn-RequestId")!

    /// POSTs `body` (JSON) to `/<operation>`; the status, the error type and the parsed body.
    static func call(_ client: some TestClientProtocol, _ operation: String, _ body: String) async throws
        -> (status: HTTPResponse.Status, error: String?, json: [String: Any]) {
        try await client.execute(uri: "/" + operation, method: .post, body: ByteBuffer(string: body)) { response in
            (response.status, response.headers[Self.errorType], try ControlPlaneRouterTests.json(response.body))
        }
    }

    func testParticipantRecordingNeedsAStorageConfigurationThatExists() async throws {
        try await ControlPlaneRouterTests.makeApp(store: nil).test(.router) { client in
            let missing = "arn:aws:ivs:us-east-1:123456789012:storage-configuration/AbCdEf123456"
            let refused = try await Self.call(client, "CreateStage",
                                         #"{"name":"s","autoParticipantRecordingConfiguration":{"storageConfigurationArn":"\#(missing)"}}"#)
            XCTAssertEqual(refused.status, .badRequest)
            XCTAssertEqual(refused.error, "ValidationException", "CreateStage's model has no ResourceNotFoundException")
            let stages = try await Self.call(client, "ListStages", "{}")
            XCTAssertEqual((stages.json["stages"] as? [Any])?.count, 1, "nothing was stored: only the configured stage is listed")

            let storage = try await Self.call(client, "CreateStorageConfiguration", #"{"s3":{"bucketName":"rec-bucket"}}"#)
            let storageArn = try XCTUnwrap((storage.json["storageConfiguration"] as? [String: Any])?["arn"] as? String)
            let created = try await Self.call(client, "CreateStage",
                                         #"{"name":"s","autoParticipantRecordingConfiguration":{"storageConfigurationArn":"\#(storageArn)"}}"#)
            XCTAssertEqual(created.status, .ok)
            let stageArn = try XCTUnwrap((created.json["stage"] as? [String: Any])?["arn"] as? String)

            let update = try await Self.call(client, "UpdateStage",
                                        #"{"arn":"\#(stageArn)","autoParticipantRecordingConfiguration":{"storageConfigurationArn":"\#(missing)"}}"#)
            XCTAssertEqual(update.status, .notFound)
            XCTAssertEqual(update.error, "ResourceNotFoundException")
            let kept = try await Self.call(client, "GetStage", #"{"arn":"\#(stageArn)"}"#)
            let recording = (kept.json["stage"] as? [String: Any])?["autoParticipantRecordingConfiguration"] as? [String: Any]
            XCTAssertEqual(recording?["storageConfigurationArn"] as? String, storageArn, "the refused update changed nothing")
            let off = try await Self.call(client, "UpdateStage",
                                     #"{"arn":"\#(stageArn)","autoParticipantRecordingConfiguration":{"storageConfigurationArn":""}}"#)
            XCTAssertEqual(off.status, .ok, "\"\" turns recording off and names nothing")
        }
    }

    func testStagesShowTheModelsRecordingDefaults() async throws {
        try await ControlPlaneRouterTests.makeApp(store: nil).test(.router) { client in
            let storage = try await Self.call(client, "CreateStorageConfiguration", #"{"s3":{"bucketName":"rec-bucket"}}"#)
            let storageArn = try XCTUnwrap((storage.json["storageConfiguration"] as? [String: Any])?["arn"] as? String)
            func recording(_ response: (status: HTTPResponse.Status, error: String?, json: [String: Any])) -> NSDictionary? {
                ((response.json["stage"] as? [String: Any])?["autoParticipantRecordingConfiguration"] as? [String: Any]).map { $0 as NSDictionary }
            }
            let defaults: [String: Any] = [
                "mediaTypes": ["AUDIO_VIDEO"],
                "thumbnailConfiguration": ["targetIntervalSeconds": 60, "storage": ["SEQUENTIAL"], "recordingMode": "DISABLED"],
                "recordingReconnectWindowSeconds": 0, "hlsConfiguration": ["targetSegmentDurationSeconds": 6],
                "recordParticipantReplicas": true]

            let plain = try await Self.call(client, "CreateStage", #"{"name":"plain"}"#)
            XCTAssertEqual(recording(plain), defaults.merging(["storageConfigurationArn": ""]) { $1 } as NSDictionary)

            let partial = try await Self.call(client, "CreateStage", #"{"name":"partial","autoParticipantRecordingConfiguration":"#
                                         + #"{"storageConfigurationArn":"\#(storageArn)","mediaTypes":["AUDIO_ONLY"],"#
                                         + #""thumbnailConfiguration":{"storage":["LATEST"]}}}"#)
            var expected = defaults.merging(["storageConfigurationArn": storageArn, "mediaTypes": ["AUDIO_ONLY"]]) { $1 }
            expected["thumbnailConfiguration"] = ["targetIntervalSeconds": 60, "storage": ["LATEST"], "recordingMode": "DISABLED"]
            XCTAssertEqual(recording(partial), expected as NSDictionary)
            let stageArn = try XCTUnwrap((partial.json["stage"] as? [String: Any])?["arn"] as? String)
            let got = try await Self.call(client, "GetStage", #"{"arn":"\#(stageArn)"}"#)
            XCTAssertEqual(recording(got), expected as NSDictionary)

            // "" turns recording off and resets every other field to its default.
            let off = try await Self.call(client, "UpdateStage", #"{"arn":"\#(stageArn)","autoParticipantRecordingConfiguration":"#
                                     + #"{"storageConfigurationArn":"","mediaTypes":["AUDIO_ONLY"]}}"#)
            XCTAssertEqual(recording(off), defaults.merging(["storageConfigurationArn": ""]) { $1 } as NSDictionary)
        }
    }

    func testDeletingAStageDetachesItsIngestConfigurations() async throws {
        try await ControlPlaneRouterTests.makeApp(store: nil).test(.router) { client in
            let stage = try await Self.call(client, "CreateStage", #"{"name":"doomed"}"#)
            let stageArn = try XCTUnwrap((stage.json["stage"] as? [String: Any])?["arn"] as? String)
            var ingestArns: [String] = []
            for name in ["a", "b"] {
                let created = try await Self.call(client, "CreateIngestConfiguration",
                                             #"{"name":"\#(name)","ingestProtocol":"RTMPS","stageArn":"\#(stageArn)"}"#)
                ingestArns.append(try XCTUnwrap((created.json["ingestConfiguration"] as? [String: Any])?["arn"] as? String))
            }
            let other = try await Self.call(client, "CreateIngestConfiguration", #"{"name":"elsewhere","ingestProtocol":"RTMPS"}"#)
            let otherArn = try XCTUnwrap((other.json["ingestConfiguration"] as? [String: Any])?["arn"] as? String)
            let deleted = try await Self.call(client, "DeleteStage", #"{"arn":"\#(stageArn)"}"#)
            XCTAssertEqual(deleted.status, .ok)
            for arn in ingestArns + [otherArn] {
                let found = try await Self.call(client, "GetIngestConfiguration", #"{"arn":"\#(arn)"}"#)
                XCTAssertEqual((found.json["ingestConfiguration"] as? [String: Any])?["stageArn"] as? String, "", arn)
            }
            let listed = try await Self.call(client, "ListIngestConfigurations", #"{"filterByStageArn":"\#(stageArn)"}"#)
            XCTAssertEqual((listed.json["ingestConfigurations"] as? [Any])?.count, 0)
        }
    }

    func testRedundantIngestHasTwoCredentialsOfOneParticipant() async throws {
        try await ControlPlaneRouterTests.makeApp(store: nil).test(.router) { client in
            let created = try await Self.call(client, "CreateIngestConfiguration", #"{"ingestProtocol":"RTMPS","redundantIngest":true}"#)
            let configuration = try XCTUnwrap(created.json["ingestConfiguration"] as? [String: Any])
            XCTAssertEqual(configuration["redundantIngest"] as? Bool, true)
            let credentials = try XCTUnwrap(configuration["redundantIngestCredentials"] as? [[String: String]])
            XCTAssertEqual(credentials.count, 2)
            XCTAssertEqual(credentials.first?["streamKey"], configuration["streamKey"] as? String, "credential 0 is the primary: its own key")
            XCTAssertNotEqual(credentials.last?["streamKey"], credentials.first?["streamKey"])
            XCTAssertEqual(Set(credentials.compactMap { $0["participantId"] }), [configuration["participantId"] as? String ?? "?"])
            let arn = try XCTUnwrap(configuration["arn"] as? String)
            let off = try await Self.call(client, "UpdateIngestConfiguration", #"{"arn":"\#(arn)","redundantIngest":false}"#)
            let updated = try XCTUnwrap(off.json["ingestConfiguration"] as? [String: Any])
            XCTAssertEqual(updated["redundantIngest"] as? Bool, false)
            XCTAssertNil(updated["redundantIngestCredentials"], "no backup key once it is off")
            let listed = try await Self.call(client, "ListIngestConfigurations", "{}")
            XCTAssertEqual((listed.json["ingestConfigurations"] as? [[String: Any]])?.first?["redundantIngest"] as? Bool, false)
        }
    }

    func testEveryAnswerCarriesItsOwnRequestId() async throws {
        try await ControlPlaneRouterTests.makeApp(store: nil).test(.router) { client in
            var seen: Set<String> = []
            for (uri, body) in [("/ListStages", "{}"), ("/ListStages", "{}"), ("/GetStage", #"{"arn":"nope"}"#),
                                ("/NoSuchOperation", "{}")] {
                let (id, security) = try await client.execute(uri: uri, method: .post, body: ByteBuffer(string: body)) { response in
                    (response.headers[Self.requestId], RequestIdMiddleware.securityHeaders.map { name, _ in response.headers[name] })
                }
                let value = try XCTUnwrap(id, "\(uri) has no x-amzn-RequestId")
                XCTAssertEqual(security, RequestIdMiddleware.securityHeaders.map(\.1), "\(uri): the model's security headers")
                XCTAssertNotNil(UUID(uuidString: value), value)
                seen.insert(value)
            }
            XCTAssertEqual(seen.count, 4, "each request its own id")
        }
    }

    /// Hummingbird answers a request NIO cannot parse with 400 and no body; the handler in
    /// front of it fills in IVS's error shape (a 100,000-character tag query, say).
    func testAnUnparsableRequestIsAnsweredInTheIVSErrorShape() throws {
        let channel = EmbeddedChannel(handler: HTTPParseErrorAnswerHandler(limits: "at most 16384 bytes each"))
        channel.pipeline.fireErrorCaught(HTTPParserError.headerOverflow)
        XCTAssertThrowsError(try channel.throwIfErrorCaught(), "the error still reaches Hummingbird, which answers and closes")
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .badRequest,
                                                                     headerFields: [.connection: "close", .contentLength: "0"])))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        guard case .head(let head) = try XCTUnwrap(channel.readOutbound(as: HTTPResponsePart.self)),
              case .body(let body) = try XCTUnwrap(channel.readOutbound(as: HTTPResponsePart.self)),
              case .end = try XCTUnwrap(channel.readOutbound(as: HTTPResponsePart.self)) else {
            return XCTFail("head, body, end")
        }
        XCTAssertEqual(head.status, .badRequest)
        XCTAssertEqual(head.headerFields[Self.errorType], "ValidationException")
        XCTAssertEqual(head.headerFields[.contentLength], "\(body.readableBytes)")
        XCTAssertNotNil(head.headerFields[Self.requestId].flatMap(UUID.init(uuidString:)), "a request id here too")
        XCTAssertEqual(head.headerFields[HTTPField.Name("X-Content-Type-Options")!], "nosniff")
        let message = try XCTUnwrap(try ControlPlaneRouterTests.json(body)["message"] as? String)
        XCTAssertTrue(message.contains("too long") && message.contains("16384"), message)

        // Answers that follow a good request pass untouched.
        let plain = EmbeddedChannel(handler: HTTPParseErrorAnswerHandler(limits: "x"))
        try plain.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .badRequest, headerFields: [.contentLength: "0"])))
        guard case .head(let untouched) = try XCTUnwrap(plain.readOutbound(as: HTTPResponsePart.self)) else { return XCTFail("head") }
        XCTAssertNil(untouched.headerFields[Self.errorType])
    }
}
