// Stage sessions, participants and their events: the model's enums value for value, the
// JSON the CLI sends and receives, every rule of the Get/List/Disconnect/UpdateStage
// requests, and session IDs.
import APIModels
import Foundation
import Testing
import TestSupport

let sessionId = "st-ZyXwvu1T2sABc"

@Suite struct StageSessionTests {
    static func session(_ extra: String) -> String { #"{"stageArn":"\#(stage)","sessionId":"\#(sessionId)"\#(extra)}"# }
    static let onlyOne = "only one of filterByUserId, filterByPublished, filterByState or filterByRecordingState can be provided"

    static let cases: [(APIOperation, String, String?)] = [
        // ListStageSessions / GetStageSession
        (.listStageSessions, #"{"stageArn":"\#(stage)","maxResults":100,"nextToken":"djE6eA=="}"#, nil),
        (.listStageSessions, #"{"stageArn":"\#(composition)"}"#, notAnARN("stageArn", composition, "stage")),
        (.listStageSessions, #"{"stageArn":"\#(stage)","maxResults":101}"#, "maxResults: must be between 1 and 100 (got 101)"),
        (.getStageSession, session(""), nil),
        (.getStageSession, #"{"stageArn":"\#(stage)"}"#, "sessionId: is required"),
        (.getStageSession, #"{"stageArn":"\#(stage)","sessionId":"st-ZyXwvu1T2sABcD"}"#,
         "sessionId: 'st-ZyXwvu1T2sABcD' is not a stage session ID (st- and 13 letters or digits)"),
        (.getStageSession, #"{"stageArn":"\#(stage)","sessionId":"st-ZyXwvu1T2s-Bc"}"#,
         "sessionId: 'st-ZyXwvu1T2s-Bc' is not a stage session ID (st- and 13 letters or digits)"),
        (.getStageSession, #"{"stageArn":"\#(stage)","sessionId":"ST-ZyXwvu1T2sABc"}"#,
         "sessionId: 'ST-ZyXwvu1T2sABc' is not a stage session ID (st- and 13 letters or digits)"),
        (.getStageSession, #"{"stageArn":"","sessionId":"\#(sessionId)"}"#, notAnARN("stageArn", "", "stage")),

        // ListParticipants: each filter alone, never two
        (.listParticipants, #"{"stageArn": "\#(stage)", "sessionId": "\#(sessionId)", "filterByPublished": true, "maxResults": 5}"#, nil),
        (.listParticipants, session(#","filterByUserId":"\#(String(repeating: "u", count: 128))""#), nil),
        (.listParticipants, session(#","filterByUserId":"\#(String(repeating: "u", count: 129))""#),
         "filterByUserId: length must be between 0 and 128 characters (got 129)"),
        (.listParticipants, session(#","filterByState":"DISCONNECTED""#), nil),
        (.listParticipants, session(#","filterByState":"GONE""#),
         "filterByState: invalid value (Cannot initialize ParticipantState from invalid String value GONE)"),
        (.listParticipants, session(#","filterByRecordingState":"STOPPING""#), nil),
        (.listParticipants, session(#","filterByRecordingState":"DISABLED""#),
         "filterByRecordingState: must be one of STARTING, ACTIVE, STOPPING, STOPPED, FAILED"),
        (.listParticipants, session(#","filterByUserId":"u","filterByPublished":false"#),
         "filterByPublished: \(onlyOne) (got filterByUserId, filterByPublished)"),
        (.listParticipants, session(#","filterByUserId":"u","filterByRecordingState":"ACTIVE""#),
         "filterByRecordingState: \(onlyOne) (got filterByUserId, filterByRecordingState)"),
        (.listParticipants, session(#","filterByState":"CONNECTED","filterByRecordingState":"ACTIVE","filterByPublished":true"#),
         "filterByState: \(onlyOne) (got filterByPublished, filterByState, filterByRecordingState)"),
        (.listParticipants, session(#","maxResults":0"#), "maxResults: must be between 1 and 100 (got 0)"),
        (.listParticipants, #"{"stageArn":"\#(stage)"}"#, "sessionId: is required"),

        // GetParticipant / ListParticipantEvents: ParticipantId [a-zA-Z0-9-]*, at most 64
        (.getParticipant, #"{"stageArn": "\#(stage)", "sessionId": "\#(sessionId)", "participantId": "xYz1c2d3e4f"}"#, nil),
        (.getParticipant, session(#","participantId":"\#(String(repeating: "p", count: 64))""#), nil),
        (.getParticipant, session(#","participantId":"\#(String(repeating: "p", count: 65))""#),
         "participantId: length must be between 0 and 64 characters (got 65)"),
        (.getParticipant, session(#","participantId":"a-b""#), nil),
        (.getParticipant, session(#","participantId":"a b""#), "participantId: 'a b' must match [a-zA-Z0-9-]*"),
        (.getParticipant, session(""), "participantId: is required"),
        (.listParticipantEvents, #"{"stageArn": "\#(stage)", "sessionId": "\#(sessionId)", "participantId": "abc", "maxResults": 3}"#, nil),
        (.listParticipantEvents, session(#","participantId":"a_b""#), "participantId: 'a_b' must match [a-zA-Z0-9-]*"),
        (.listParticipantEvents, session(#","participantId":"abc","nextToken":"%%""#), "nextToken: must match [a-zA-Z0-9+/=_-]*"),
        (.listParticipantEvents, #"{"stageArn":"\#(stage)","sessionId":"st-1","participantId":"abc"}"#,
         "sessionId: 'st-1' is not a stage session ID (st- and 13 letters or digits)"),

        // DisconnectParticipant: ParticipantTokenId [a-zA-Z0-9-_]*, at most 64; reason at most 128
        (.disconnectParticipant, #"{"stageArn": "\#(stage)", "participantId": "p1", "reason": "bye"}"#, nil),
        (.disconnectParticipant, #"{"stageArn":"\#(stage)","participantId":"a_b-C"}"#, nil),
        (.disconnectParticipant, #"{"stageArn":"\#(stage)","participantId":"a.b"}"#, "participantId: 'a.b' must match [a-zA-Z0-9-_]*"),
        (.disconnectParticipant, #"{"stageArn":"\#(stage)","participantId":"\#(String(repeating: "p", count: 65))"}"#,
         "participantId: length must be between 0 and 64 characters (got 65)"),
        (.disconnectParticipant, #"{"stageArn":"\#(stage)","participantId":"p","reason":"\#(String(repeating: "r", count: 128))"}"#, nil),
        (.disconnectParticipant, #"{"stageArn":"\#(stage)"}"#, "participantId: is required"),
        (.disconnectParticipant, #"{"participantId":"p"}"#, "stageArn: is required"),

        // UpdateStage: name and the recording configuration, as on CreateStage
        (.updateStage, #"{"arn": "\#(stage)", "name": "n", "autoParticipantRecordingConfiguration": {"storageConfigurationArn": ""}}"#, nil),
        (.updateStage, #"{"arn":"\#(stage)","autoParticipantRecordingConfiguration":{"storageConfigurationArn":"\#(storage)","mediaTypes":["AUDIO_ONLY"],"thumbnailConfiguration":{"targetIntervalSeconds":10,"storage":["LATEST","SEQUENTIAL"],"recordingMode":"INTERVAL"},"recordingReconnectWindowSeconds":300,"hlsConfiguration":{"targetSegmentDurationSeconds":10},"recordParticipantReplicas":false}}"#, nil),
        (.updateStage, #"{"arn":"\#(stage)","autoParticipantRecordingConfiguration":{}}"#,
         "autoParticipantRecordingConfiguration.storageConfigurationArn: is required"),
        (.updateStage, #"{"arn":"\#(stage)","autoParticipantRecordingConfiguration":{"storageConfigurationArn":"\#(encoder)"}}"#,
         notAnARN("autoParticipantRecordingConfiguration.storageConfigurationArn", encoder, "storage-configuration")),
        (.updateStage, #"{"arn":"\#(stage)","autoParticipantRecordingConfiguration":{"storageConfigurationArn":"","mediaTypes":["AUDIO_ONLY","NONE"]}}"#,
         "autoParticipantRecordingConfiguration.mediaTypes: must contain between 0 and 1 items (got 2)"),
        (.updateStage, #"{"arn":"\#(stage)","autoParticipantRecordingConfiguration":{"storageConfigurationArn":"","thumbnailConfiguration":{"targetIntervalSeconds":0}}}"#,
         "autoParticipantRecordingConfiguration.thumbnailConfiguration.targetIntervalSeconds: must be between 1 and 86400 (got 0)"),
        (.updateStage, #"{"arn":"\#(stage)","autoParticipantRecordingConfiguration":{"storageConfigurationArn":"","recordingReconnectWindowSeconds":-1}}"#,
         "autoParticipantRecordingConfiguration.recordingReconnectWindowSeconds: must be between 0 and 300 (got -1)"),
        (.updateStage, #"{"arn":"\#(stage)","autoParticipantRecordingConfiguration":{"storageConfigurationArn":"","hlsConfiguration":{"targetSegmentDurationSeconds":1}}}"#,
         "autoParticipantRecordingConfiguration.hlsConfiguration.targetSegmentDurationSeconds: must be between 2 and 10 (got 1)"),
        (.updateStage, #"{"arn":"\#(stage)","name":"\#(String(repeating: "n", count: 129))"}"#, "name: length must be between 0 and 128 characters (got 129)"),
        (.updateStage, #"{"arn":"\#(channel)"}"#, notAnARN("arn", channel, "stage")),

        // CreateStage's token configurations share the 1 KB attribute budget.
        (.createStage, #"{"participantTokenConfigurations":[{"attributes":\#(IngestConfigurationTests.attributes1024)}]}"#, nil),
        (.createStage, #"{"participantTokenConfigurations":[{},{"attributes":{"k":"\#(String(repeating: "v", count: 1024))"}}]}"#,
         "participantTokenConfigurations[1].attributes: keys and values may total at most 1024 bytes (got 1025)"),
    ]

    @Test(arguments: cases.indices)
    func rule(index: Int) {
        let (operation, body, expected) = Self.cases[index]
        #expect(check(operation, body) == expected, "\(operation.name) \(body)")
    }

    @Test func enumsCarryEveryModelValue() {
        #expect(EventName.allCases.map(\.rawValue) == ["JOINED", "LEFT", "PUBLISH_STARTED", "PUBLISH_STOPPED", "SUBSCRIBE_STARTED",
                                                      "SUBSCRIBE_STOPPED", "PUBLISH_ERROR", "SUBSCRIBE_ERROR", "JOIN_ERROR",
                                                      "REPLICATION_STARTED", "REPLICATION_STOPPED", "TOKEN_EXCHANGED"])
        #expect(EventErrorCode.allCases.map(\.rawValue) == ["INSUFFICIENT_CAPABILITIES", "QUOTA_EXCEEDED", "PUBLISHER_NOT_FOUND",
                                                           "BITRATE_EXCEEDED", "RESOLUTION_EXCEEDED", "STREAM_DURATION_EXCEEDED",
                                                           "INVALID_AUDIO_CODEC", "INVALID_VIDEO_CODEC", "INVALID_PROTOCOL",
                                                           "INVALID_STREAM_KEY", "REUSE_OF_STREAM_KEY", "B_FRAME_PRESENT",
                                                           "INVALID_INPUT", "INTERNAL_SERVER_EXCEPTION"])
        #expect(ParticipantState.allCases.map(\.rawValue) == ["CONNECTED", "DISCONNECTED"])
        #expect(ParticipantProtocol.allCases.map(\.rawValue) == ["UNKNOWN", "WHIP", "RTMP", "RTMPS"])
        #expect(ParticipantRecordingState.allCases.map(\.rawValue) == ["STARTING", "ACTIVE", "STOPPING", "STOPPED", "FAILED", "DISABLED"])
        #expect(ReplicationType.allCases.map(\.rawValue) == ["SOURCE", "REPLICA", "NONE"])
        #expect(ReplicationState.allCases.map(\.rawValue) == ["ACTIVE", "STOPPED"])
        #expect(IngestProtocol.allCases.map(\.rawValue) == ["RTMP", "RTMPS"])
        #expect(IngestConfigurationState.allCases.map(\.rawValue) == ["ACTIVE", "INACTIVE"])
    }

    @Test func cliBodiesDecode() throws {
        let list = try APIJSON.decodeRequest(ListParticipantsRequest.self, from: Data(
            #"{"stageArn": "\#(stage)", "sessionId": "\#(sessionId)", "filterByPublished": true, "maxResults": 5}"#.utf8))
        #expect(list == ListParticipantsRequest(stageArn: stage, sessionId: sessionId, filterByPublished: true, maxResults: 5))
        let disconnect = try APIJSON.decodeRequest(DisconnectParticipantRequest.self, from: Data(
            #"{"stageArn": "\#(stage)", "participantId": "p1", "reason": "bye"}"#.utf8))
        #expect(disconnect == DisconnectParticipantRequest(stageArn: stage, participantId: "p1", reason: "bye"))
        let update = try APIJSON.decodeRequest(UpdateStageRequest.self, from: Data(
            #"{"arn": "\#(stage)", "name": "n", "autoParticipantRecordingConfiguration": {"storageConfigurationArn": ""}}"#.utf8))
        #expect(update == UpdateStageRequest(arn: stage, name: "n",
                                             autoParticipantRecordingConfiguration: AutoParticipantRecordingConfiguration(storageConfigurationArn: "")))
        let events = try APIJSON.decodeRequest(ListParticipantEventsRequest.self, from: Data(
            #"{"stageArn": "\#(stage)", "sessionId": "\#(sessionId)", "participantId": "abc", "maxResults": 3}"#.utf8))
        #expect(events == ListParticipantEventsRequest(stageArn: stage, sessionId: sessionId, participantId: "abc", maxResults: 3))
    }

    @Test func sessionsAndParticipantsAsJSON() throws {
        let open = StageSession(sessionId: sessionId, startTime: APITimestamp(iso8601: "2024-05-01T10:00:00Z"))
        let ended = StageSession(sessionId: "st-AAAAAAAAAAAAA", startTime: APITimestamp(iso8601: "2024-04-30T10:00:00Z"),
                                 endTime: APITimestamp(iso8601: "2024-04-30T11:30:00Z"))
        #expect(try APIJSON.encodeString(ListStageSessionsResponse(stageSessions: [open.summary, ended.summary]))
            == #"{"stageSessions":[{"sessionId":"\#(sessionId)","startTime":"2024-05-01T10:00:00Z"},{"endTime":"2024-04-30T11:30:00Z","sessionId":"st-AAAAAAAAAAAAA","startTime":"2024-04-30T10:00:00Z"}]}"#)
        #expect(try APIJSON.encodeString(GetStageSessionResponse(stageSession: open))
            == #"{"stageSession":{"sessionId":"\#(sessionId)","startTime":"2024-05-01T10:00:00Z"}}"#)

        let participant = Participant(participantId: "p1", userId: "u", state: .disconnected,
                                      firstJoinTime: APITimestamp(iso8601: "2024-05-01T10:00:05Z"), attributes: [:],
                                      published: false, protocol: .whip)
        #expect(try APIJSON.encodeString(ListParticipantsResponse(participants: [participant.summary], nextToken: "djE6eA=="))
            == #"{"nextToken":"djE6eA==","participants":[{"firstJoinTime":"2024-05-01T10:00:05Z","participantId":"p1","published":false,"recordingState":"DISABLED","redundantIngest":false,"replicationType":"NONE","state":"DISCONNECTED","userId":"u"}]}"#)

        // Every member of the model's Participant, as IVS reports a replica.
        let full = #"{"participant":{"attributes":{"a":"1"},"browserName":"Chrome","browserVersion":"124.0","firstJoinTime":"2024-05-01T10:00:05Z","ingestConfigurationArn":"\#(ingestArn)","ispName":"Example ISP","osName":"Linux","osVersion":"6.1","participantId":"p2","protocol":"RTMPS","published":true,"recordingS3BucketName":"bucket","recordingS3Prefix":"prefix","recordingState":"ACTIVE","redundantIngest":false,"replicationState":"ACTIVE","replicationType":"REPLICA","sdkVersion":"1.2.3","sourceSessionId":"st-BBBBBBBBBBBBB","sourceStageArn":"\#(stage)","state":"CONNECTED","userId":"u2"}}"#
        let decoded = try APIJSON.decode(GetParticipantResponse.self, from: Data(full.utf8))
        let member = try #require(decoded.participant)
        #expect(member.replicationType == .replica && member.replicationState == .active)
        #expect(member.sourceSessionId == "st-BBBBBBBBBBBBB" && member.protocol == .rtmps && member.ispName == "Example ISP")
        #expect(try APIJSON.encodeString(decoded) == full)
        #expect(member.summary == ParticipantSummary(
            participantId: "p2", userId: "u2", state: .connected, firstJoinTime: APITimestamp(iso8601: "2024-05-01T10:00:05Z"),
            published: true, recordingState: .active, replicationType: .replica, replicationState: .active,
            sourceStageArn: stage, sourceSessionId: "st-BBBBBBBBBBBBB", redundantIngest: false, ingestConfigurationArn: ingestArn))
        // Optional members are left out, not null.
        #expect(try APIJSON.encodeString(ParticipantSummary(participantId: nil, userId: nil, state: nil, firstJoinTime: nil, published: nil,
                                                            recordingState: nil, replicationType: nil, redundantIngest: nil,
                                                            ingestConfigurationArn: nil)) == "{}")
    }

    @Test func eventsCarryTheModelsMembers() throws {
        let time = APITimestamp(iso8601: "2024-05-01T10:01:00Z")
        let subscribe = ParticipantEvent(name: .subscribeStarted, participantId: "p1", eventTime: time, remoteParticipantId: "p2")
        let exchanged = ParticipantEvent(
            name: .tokenExchanged, participantId: "p1", eventTime: time,
            previousToken: ExchangedParticipantToken(capabilities: [.subscribe], attributes: ["role": "viewer"], userId: "u",
                                                     expirationTime: APITimestamp(iso8601: "2024-05-01T22:00:00Z")),
            newToken: ExchangedParticipantToken(capabilities: [.publish, .subscribe], attributes: ["role": "guest"], userId: "u",
                                                expirationTime: APITimestamp(iso8601: "2024-05-02T10:00:00Z")))
        let replication = ParticipantEvent(name: .replicationStarted, participantId: "p1", eventTime: time,
                                           destinationStageArn: stage, destinationSessionId: "st-CCCCCCCCCCCCC", replica: false)
        let failed = ParticipantEvent(name: .publishError, participantId: "p1", eventTime: time, errorCode: .bFramePresent)
        let text = try APIJSON.encodeString(ListParticipantEventsResponse(events: [subscribe, exchanged, replication, failed]))
        #expect(text == #"{"events":[{"eventTime":"2024-05-01T10:01:00Z","name":"SUBSCRIBE_STARTED","participantId":"p1","remoteParticipantId":"p2"},{"eventTime":"2024-05-01T10:01:00Z","name":"TOKEN_EXCHANGED","newToken":{"attributes":{"role":"guest"},"capabilities":["PUBLISH","SUBSCRIBE"],"expirationTime":"2024-05-02T10:00:00Z","userId":"u"},"participantId":"p1","previousToken":{"attributes":{"role":"viewer"},"capabilities":["SUBSCRIBE"],"expirationTime":"2024-05-01T22:00:00Z","userId":"u"}},{"destinationSessionId":"st-CCCCCCCCCCCCC","destinationStageArn":"\#(stage)","eventTime":"2024-05-01T10:01:00Z","name":"REPLICATION_STARTED","participantId":"p1","replica":false},{"errorCode":"B_FRAME_PRESENT","eventTime":"2024-05-01T10:01:00Z","name":"PUBLISH_ERROR","participantId":"p1"}]}"#)
        #expect(try APIJSON.decode(ListParticipantEventsResponse.self, from: Data(text.utf8)).events == [subscribe, exchanged, replication, failed])
        #expect(ParticipantEventName.left == EventName.left)
    }

    @Test func sessionIDsFollowTheModel() {
        var a = SeededGenerator(seed: 99)
        var b = SeededGenerator(seed: 99)
        let first = StageSessionID.generate(using: &a)
        #expect(first == StageSessionID.generate(using: &b))
        #expect(first.count == StageSessionID.length && StageSessionID.isValid(first) && wholeMatch("st-[a-zA-Z0-9]+", first))
        var seen: Set<String> = [first]
        for _ in 0..<500 {
            let id = StageSessionID.generate(using: &a)
            #expect(id.count == 16 && StageSessionID.isValid(id) && wholeMatch("st-[a-zA-Z0-9]+", id))
            seen.insert(id)
        }
        #expect(seen.count == 501)
        for bad in ["", "st-", "st-ZyXwvu1T2sAB", "st-ZyXwvu1T2sABcD", "st_ZyXwvu1T2sABc", "st-ZyXwvu1T2sAB\u{e9}", "st-ZyXwvu1T2sAB "] {
            #expect(!StageSessionID.isValid(bad), "\(bad)")
        }
    }
}
