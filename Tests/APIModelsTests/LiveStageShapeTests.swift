// Ingest configurations, stage sessions and participants: the model's shapes as the AWS CLI
// sends them, every validation rule accepted and rejected, stream keys and session IDs.
import APIModels
import Foundation
import Testing
import TestSupport

struct LiveStageShapeTests {
    let ingestArn = "arn:aws:ivs:us-east-1:123456789012:ingest-configuration/AbCdEf123456"
    let session = "st-ZyXwvu1T2sABc"

    /// (operation, body, expected error or nil)
    var cases: [(APIOperation, String, String?)] {
        [
            // CreateIngestConfiguration: the CLI's body for the user guide's example.
            (.createIngestConfiguration, #"{"name":"test","stageArn":"\#(stage)","userId":"123","ingestProtocol":"RTMPS"}"#, nil),
            (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS"}"#, nil),
            (.createIngestConfiguration, #"{"stageArn":"","ingestProtocol":"RTMPS"}"#, nil),
            (.createIngestConfiguration, #"{"ingestProtocol":"RTMP","insecureIngest":true}"#, nil),
            (.createIngestConfiguration, #"{"ingestProtocol":"RTMP"}"#,
             "insecureIngest: must be true when ingestProtocol is RTMP (plain RTMP is refused otherwise)"),
            (.createIngestConfiguration, #"{"ingestProtocol":"SRT"}"#, "ingestProtocol: invalid value (Cannot initialize IngestProtocol from invalid String value SRT)"),
            (.createIngestConfiguration, #"{}"#, "ingestProtocol: is required"),
            (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","name":"a b"}"#, "name: 'a b' must match [a-zA-Z0-9-_]*"),
            (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","stageArn":"\#(channel)"}"#,
             "stageArn: '\(channel)' is not a valid stage ARN (expected arn:aws:ivs:<region>:<account-id>:stage/<id>, at most 128 characters)"),
            (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","userId":"\#(String(repeating: "u", count: 129))"}"#,
             "userId: length must be between 0 and 128 characters (got 129)"),
            (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","attributes":{"k":"\#(String(repeating: "v", count: 1024))"}}"#,
             "attributes: keys and values may total at most 1024 bytes (got 1025)"),
            (.getIngestConfiguration, #"{"arn":"\#(ingestArn)"}"#, nil),
            (.getIngestConfiguration, #"{"arn":"\#(stage)"}"#,
             "arn: '\(stage)' is not a valid ingest-configuration ARN (expected arn:aws:ivs:<region>:<account-id>:ingest-configuration/<id>, at most 128 characters)"),
            (.updateIngestConfiguration, #"{"arn":"\#(ingestArn)","stageArn":""}"#, nil),
            (.updateIngestConfiguration, #"{"arn":"\#(ingestArn)","stageArn":"\#(stage)"}"#, nil),
            (.deleteIngestConfiguration, #"{"arn":"\#(ingestArn)","force":true}"#, nil),
            (.listIngestConfigurations, #"{"filterByState":"ACTIVE","maxResults":100}"#, nil),
            (.listIngestConfigurations, #"{"filterByStageArn":"\#(stage)","filterByState":"ACTIVE"}"#,
             "filterByState: only one filter (filterByStageArn or filterByState) can be used at a time"),
            (.listIngestConfigurations, #"{"maxResults":101}"#, "maxResults: must be between 1 and 100 (got 101)"),
            // Sessions and participants.
            (.listStageSessions, #"{"stageArn":"\#(stage)"}"#, nil),
            (.listStageSessions, #"{}"#, "stageArn: is required"),
            (.getStageSession, #"{"stageArn":"\#(stage)","sessionId":"\#(session)"}"#, nil),
            (.getStageSession, #"{"stageArn":"\#(stage)","sessionId":"st-short"}"#,
             "sessionId: 'st-short' is not a stage session ID (st- and 13 letters or digits)"),
            (.listParticipants, #"{"stageArn":"\#(stage)","sessionId":"\#(session)","filterByState":"CONNECTED"}"#, nil),
            (.listParticipants, #"{"stageArn":"\#(stage)","sessionId":"\#(session)","filterByState":"CONNECTED","filterByPublished":true}"#,
             "filterByState: only one of filterByUserId, filterByPublished, filterByState or filterByRecordingState can be provided (got filterByPublished, filterByState)"),
            (.listParticipants, #"{"stageArn":"\#(stage)","sessionId":"\#(session)","filterByRecordingState":"DISABLED"}"#,
             "filterByRecordingState: must be one of STARTING, ACTIVE, STOPPING, STOPPED, FAILED"),
            (.getParticipant, #"{"stageArn":"\#(stage)","sessionId":"\#(session)","participantId":"xYz1c2d3e4f"}"#, nil),
            (.getParticipant, #"{"stageArn":"\#(stage)","sessionId":"\#(session)","participantId":"x_y"}"#,
             "participantId: 'x_y' must match [a-zA-Z0-9-]*"),
            (.listParticipantEvents, #"{"stageArn":"\#(stage)","sessionId":"\#(session)","participantId":"abc","maxResults":0}"#,
             "maxResults: must be between 1 and 100 (got 0)"),
            (.disconnectParticipant, #"{"stageArn":"\#(stage)","participantId":"a_b-1","reason":"bye"}"#, nil),
            (.disconnectParticipant, #"{"stageArn":"\#(stage)","participantId":"abc","reason":"\#(String(repeating: "r", count: 129))"}"#,
             "reason: length must be between 0 and 128 characters (got 129)"),
            (.updateStage, #"{"arn":"\#(stage)","name":"renamed"}"#, nil),
            (.updateStage, #"{"arn":"\#(stage)","name":"no spaces"}"#, "name: 'no spaces' must match [a-zA-Z0-9-_]*"),
        ]
    }

    @Test("every rule, accepted and rejected, with the field in the message")
    func validation() {
        for (operation, body, expected) in cases {
            #expect(check(operation, body) == expected, "\(operation.name) \(body)")
        }
    }

    @Test("stream keys match the model's pattern, carry the configuration ID and parse back")
    func streamKeys() {
        var generator = SeededGenerator(seed: 42)
        let key = StreamKey.generate(account: "123456789012", region: "us-east-1", ingestConfigurationID: "AbCdEf123456", using: &generator)
        let text = key.description
        #expect(text.hasPrefix("rt_123456789012_us-east-1_AbCdEf123456_"))
        #expect(text.count == "rt_123456789012_us-east-1_AbCdEf123456_".count + StreamKey.secretLength)
        #expect(StreamKey(parsing: text) == key)
        #expect(key.redacted == "rt_123456789012_us-east-1_AbCdEf123456_***")
        var other = SeededGenerator(seed: 43)
        #expect(StreamKey.generate(account: "1", region: "r", ingestConfigurationID: "a", using: &other).secret != key.secret)
        for bad in ["", "rt_", "rt_12_us-east-1_id", "rt_x_us-east-1_id_secret", "rt_12_US_id_secret", "rt_12_r_id/x_secret",
                    "rt_12_r_id_", "live_12_r_id_s", String(repeating: "a", count: 600)] {
            #expect(StreamKey(parsing: bad) == nil, "\(bad)")
        }
        // The secret may contain underscores (the pattern's last part is `.+`).
        #expect(StreamKey(parsing: "rt_1_r_id_a_b")?.secret == "a_b")
    }

    @Test("stage session IDs are st- and 13 alphanumerics")
    func sessionIDs() {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<100 {
            let id = StageSessionID.generate(using: &generator)
            #expect(id.count == 16 && StageSessionID.isValid(id))
        }
        #expect(!StageSessionID.isValid("st-abc"))
        #expect(!StageSessionID.isValid("xx-ZyXwvu1T2sABc"))
        #expect(!StageSessionID.isValid("st-ZyXwvu1T2sAB_"))
    }

    @Test("participants encode the model's member names; disabled recording reports empty bucket and prefix")
    func participantJSON() throws {
        let participant = Participant(participantId: "p1", userId: "u", state: .connected,
                                      firstJoinTime: APITimestamp(secondsSince1970: 1_700_000_000), attributes: ["a": "b"],
                                      published: true, protocol: .rtmps,
                                      ingestConfigurationArn: ingestArn)
        let text = try APIJSON.encodeString(GetParticipantResponse(participant: participant))
        #expect(text == #"{"participant":{"attributes":{"a":"b"},"firstJoinTime":"2023-11-14T22:13:20Z","ingestConfigurationArn":"\#(ingestArn)","participantId":"p1","protocol":"RTMPS","published":true,"recordingS3BucketName":"","recordingS3Prefix":"","recordingState":"DISABLED","redundantIngest":false,"replicationType":"NONE","state":"CONNECTED","userId":"u"}}"#)
        let event = ParticipantEvent(name: .publishError, participantId: "p1", eventTime: APITimestamp(secondsSince1970: 0),
                                     errorCode: .bitrateExceeded)
        #expect(try APIJSON.encodeString(event) == #"{"errorCode":"BITRATE_EXCEEDED","eventTime":"1970-01-01T00:00:00Z","name":"PUBLISH_ERROR","participantId":"p1"}"#)
    }

    @Test("the model's error shapes for the new operations")
    func modeledErrors() {
        #expect(APIOperation.createIngestConfiguration.modeledErrors == [.validation, .accessDenied, .serviceQuotaExceeded, .pendingVerification])
        #expect(APIOperation.deleteIngestConfiguration.modeledErrors == [.resourceNotFound, .validation, .accessDenied, .conflict, .pendingVerification])
        #expect(APIOperation.listParticipants.modeledErrors == [.validation, .accessDenied])
        #expect(APIOperation.getStageSession.modeledErrors == [.resourceNotFound, .validation, .accessDenied])
        #expect(APIOperation.disconnectParticipant.modeledErrors == [.resourceNotFound, .validation, .accessDenied, .pendingVerification])
        #expect(APIOperation.updateStage.modeledErrors == [.resourceNotFound, .validation, .accessDenied, .serviceQuotaExceeded, .conflict, .pendingVerification])
    }
}

