import Testing
import Foundation
import APIModels
import Layout

/// Decodes and validates `json` as the request of `operation`; nil when it is accepted.
func check(_ operation: APIOperation, _ json: String, options: ValidationOptions = ValidationOptions()) -> String? {
    let body = Data(json.utf8)
    do {
        switch operation {
        case .tagResource:
            let tagBody = try APIJSON.decode(TagResourceRequest.Body.self, from: body)
            try TagResourceRequest(resourceArn: "arn:aws:ivs:us-east-1:123456789012:stage/abc", body: tagBody).validate()
        case .untagResource, .listTagsForResource:
            return "not a JSON-body operation"
        default:
            // Every other operation's body is its whole request (APIOperation.jsonBodyRequests).
            guard let shape = APIOperation.jsonBodyRequests.first(where: { $0.operation == operation }) else {
                return "no request shape for \(operation)"
            }
            try decodeAndValidate(shape, body, options: options)
        }
        return nil
    } catch {
        #expect(error.code == .validation)
        return error.message
    }
}

private func decodeAndValidate<Request: Decodable & APIRequest>(_ type: Request.Type, _ body: Data,
                                                                options: ValidationOptions) throws(APIError) {
    _ = try APIJSON.decodeRequest(type, from: body, options: options)
}

let stage = "arn:aws:ivs:us-east-1:123456789012:stage/8faHz1SQp0ik"
let channel = "arn:aws:ivs:us-east-1:123456789012:channel/D0lMW4dfMR8r"
let encoder = "arn:aws:ivs:us-east-1:123456789012:encoder-configuration/9W590BY2M8s4"
let storage = "arn:aws:ivs:us-east-1:123456789012:storage-configuration/ZBcEbgBE24Cq"
let composition = "arn:aws:ivs:us-east-1:123456789012:composition/YVoaXkKdEdRP"

func replication(window: Int) -> String {
    #"{"sourceStageArn":"\#(stage)","destinationStageArn":"arn:aws:ivs:us-east-1:123456789012:stage/ZyXwVuTsRqPo","participantId":"AbCd1234","reconnectWindowSeconds":\#(window)}"#
}

func start(_ destinations: String, extra: String = "") -> String {
    #"{"stageArn":"\#(stage)","destinations":\#(destinations)\#(extra)}"#
}
func s3(_ inner: String = "") -> String {
    #"{"s3":{"storageConfigurationArn":"\#(storage)","encoderConfigurationArns":["\#(encoder)"]\#(inner)}}"#
}
let channelDestination = #"{"channel":{"channelArn":"\#(channel)","encoderConfigurationArn":"\#(encoder)"}}"#

/// (operation, body, expected error message or nil when accepted)
let cases: [(APIOperation, String, String?)] = [
    // StartComposition: stage ARN, destinations, idempotency token, tags, layout
    (.startComposition, start("[\(channelDestination)]"), nil),
    (.startComposition, start("[\(channelDestination),\(s3())]"), nil),
    (.startComposition, start("[\(s3())]").replacingOccurrences(of: ":stage/", with: ":channel/"),
     "stageArn: 'arn:aws:ivs:us-east-1:123456789012:channel/8faHz1SQp0ik' is not a valid stage ARN (expected arn:aws:ivs:<region>:<account-id>:stage/<id>, at most 128 characters)"),
    (.startComposition, #"{"destinations":[]}"#, "stageArn: is required"),
    (.startComposition, #"{"stageArn":"\#(stage)"}"#, "destinations: is required"),
    (.startComposition, start("[]"), "destinations: must contain between 1 and 2 items (got 0)"),
    (.startComposition, start("[\(s3()),\(channelDestination),\(s3())]"), "destinations: must contain between 1 and 2 items (got 3)"),
    (.startComposition, start("[\(channelDestination),\(channelDestination)]"),
     "destinations[1]: only one channel destination is allowed (destinations[0] is one)"),
    (.startComposition, start("[\(s3()),\(s3())]"), "destinations[1]: only one s3 destination is allowed (destinations[0] is one)"),
    (.startComposition, start("[{}]"), "destinations[0]: either channel or s3 must be specified"),
    (.startComposition, start(#"[{"channel":{"channelArn":"\#(channel)"},"s3":{"storageConfigurationArn":"\#(storage)","encoderConfigurationArns":["\#(encoder)"]}}]"#),
     "destinations[0]: specify either channel or s3, not both"),
    (.startComposition, start(#"[{"name":"my dest","channel":{"channelArn":"\#(channel)"}}]"#), "destinations[0].name: 'my dest' must match [a-zA-Z0-9-_]*"),
    (.startComposition, start(#"[{"name":"my-dest_1","channel":{"channelArn":"\#(channel)"}}]"#), nil),
    (.startComposition, start(#"[{"channel":{"channelArn":"\#(stage)"}}]"#),
     "destinations[0].channel.channelArn: '\(stage)' is not a valid channel ARN (expected arn:aws:ivs:<region>:<account-id>:channel/<id>, at most 128 characters)"),
    (.startComposition, start(#"[{"channel":{"channelArn":"\#(channel)","encoderConfigurationArn":"nope"}}]"#),
     "destinations[0].channel.encoderConfigurationArn: 'nope' is not a valid encoder-configuration ARN (expected arn:aws:ivs:<region>:<account-id>:encoder-configuration/<id>, at most 128 characters)"),
    (.startComposition, start(#"[{"s3":{"storageConfigurationArn":"\#(storage)","encoderConfigurationArns":[]}}]"#),
     "destinations[0].s3.encoderConfigurationArns: must contain exactly 1 item (got 0)"),
    (.startComposition, start(#"[{"s3":{"storageConfigurationArn":"\#(storage)","encoderConfigurationArns":["\#(encoder)","\#(encoder)"]}}]"#),
     "destinations[0].s3.encoderConfigurationArns: must contain exactly 1 item (got 2)"),
    (.startComposition, start(#"[{"s3":{"storageConfigurationArn":"\#(storage)"}}]"#), "destinations[0].s3.encoderConfigurationArns: is required"),
    (.startComposition, start(#"[{"s3":{"storageConfigurationArn":"\#(encoder)","encoderConfigurationArns":["\#(encoder)"]}}]"#),
     "destinations[0].s3.storageConfigurationArn: '\(encoder)' is not a valid storage-configuration ARN (expected arn:aws:ivs:<region>:<account-id>:storage-configuration/<id>, at most 128 characters)"),
    (.startComposition, start("[\(s3(#","recordingConfiguration":{"format":"HLS","hlsConfiguration":{"targetSegmentDurationSeconds":2}}"#))]"), nil),
    (.startComposition, start("[\(s3(#","recordingConfiguration":{"hlsConfiguration":{"targetSegmentDurationSeconds":10}}"#))]"), nil),
    (.startComposition, start("[\(s3(#","recordingConfiguration":{"hlsConfiguration":{"targetSegmentDurationSeconds":1}}"#))]"),
     "destinations[0].s3.recordingConfiguration.hlsConfiguration.targetSegmentDurationSeconds: must be between 2 and 10 (got 1)"),
    (.startComposition, start("[\(s3(#","recordingConfiguration":{"hlsConfiguration":{"targetSegmentDurationSeconds":11}}"#))]"),
     "destinations[0].s3.recordingConfiguration.hlsConfiguration.targetSegmentDurationSeconds: must be between 2 and 10 (got 11)"),
    (.startComposition, start("[\(s3(#","recordingConfiguration":{"format":"MP4"}"#))]"),
     "destinations[0].s3.recordingConfiguration.format: invalid value (Cannot initialize RecordingConfigurationFormat from invalid String value MP4)"),
    (.startComposition, start("[\(s3(#","thumbnailConfigurations":[{"targetIntervalSeconds":1,"storage":["LATEST","SEQUENTIAL"]}]"#))]"), nil),
    (.startComposition, start("[\(s3(#","thumbnailConfigurations":[{"targetIntervalSeconds":86400}]"#))]"), nil),
    (.startComposition, start("[\(s3(#","thumbnailConfigurations":[{"targetIntervalSeconds":0}]"#))]"),
     "destinations[0].s3.thumbnailConfigurations[0].targetIntervalSeconds: must be between 1 and 86400 (got 0)"),
    (.startComposition, start("[\(s3(#","thumbnailConfigurations":[{"targetIntervalSeconds":86401}]"#))]"),
     "destinations[0].s3.thumbnailConfigurations[0].targetIntervalSeconds: must be between 1 and 86400 (got 86401)"),
    (.startComposition, start("[\(s3(#","thumbnailConfigurations":[{},{}]"#))]"),
     "destinations[0].s3.thumbnailConfigurations: must contain between 0 and 1 items (got 2)"),
    (.startComposition, start("[\(s3(#","thumbnailConfigurations":[{"storage":["LATEST","SEQUENTIAL","LATEST"]}]"#))]"),
     "destinations[0].s3.thumbnailConfigurations[0].storage: must contain between 0 and 2 items (got 3)"),
    (.startComposition, start("[\(s3(#","thumbnailConfigurations":[{"storage":["ALL"]}]"#))]"),
     "destinations[0].s3.thumbnailConfigurations[0].storage[0]: invalid value (Cannot initialize ThumbnailStorageType from invalid String value ALL)"),
    (.startComposition, start("[\(channelDestination)]", extra: #","idempotencyToken":"abc-DEF_123""#), nil),
    (.startComposition, start("[\(channelDestination)]", extra: #","idempotencyToken":"""#),
     "idempotencyToken: length must be between 1 and 64 characters (got 0)"),
    (.startComposition, start("[\(channelDestination)]", extra: #","idempotencyToken":"\#(String(repeating: "a", count: 64))""#), nil),
    (.startComposition, start("[\(channelDestination)]", extra: #","idempotencyToken":"\#(String(repeating: "a", count: 65))""#),
     "idempotencyToken: length must be between 1 and 64 characters (got 65)"),
    (.startComposition, start("[\(channelDestination)]", extra: #","idempotencyToken":"a.b""#), "idempotencyToken: 'a.b' must match [a-zA-Z0-9-_]*"),
    (.startComposition, start("[\(channelDestination)]", extra: #","tags":{"env":"prod","":"x"}"#), "tags: tag key '' must be 1 to 128 characters"),
    (.startComposition, start("[\(channelDestination)]", extra: #","tags":{"env":"\#(String(repeating: "v", count: 256))"}"#), nil),
    (.startComposition, start("[\(channelDestination)]", extra: #","tags":{"env":"\#(String(repeating: "v", count: 257))"}"#),
     "tags.env: length must be between 0 and 256 characters (got 257)"),
    (.startComposition, start("[\(channelDestination)]", extra: #","tags":{"\#(String(repeating: "k", count: 129))":"v"}"#),
     "tags: tag key '\(String(repeating: "k", count: 129))' must be 1 to 128 characters"),
    (.startComposition, start("[\(channelDestination)]", extra: #","tags":{\#((1...50).map { "\"k\($0)\":\"v\"" }.joined(separator: ","))}"#), nil),
    (.startComposition, start("[\(channelDestination)]", extra: #","tags":{\#((1...51).map { "\"k\($0)\":\"v\"" }.joined(separator: ","))}"#),
     "tags: at most 50 tags are allowed (got 51)"),
    (.startComposition, start("[\(channelDestination)]", extra: #","layout":{"grid":{"featuredParticipantAttribute":"isFeatured","videoFillMode":"COVER","gridGap":0}}"#), nil),
    (.startComposition, start("[\(channelDestination)]", extra: #","layout":{"grid":{"gridGap":-1}}"#), "layout.grid.gridGap: must be at least 0 (got -1)"),
    (.startComposition, start("[\(channelDestination)]", extra: #","layout":{"grid":{"featuredParticipantAttribute":"is featured"}}"#),
     "layout.grid.featuredParticipantAttribute: 'is featured' must match [a-zA-Z0-9-_]*"),
    (.startComposition, start("[\(channelDestination)]", extra: #","layout":{"grid":{"videoAspectRatio":"WIDE"}}"#),
     "layout.grid.videoAspectRatio: invalid value (Cannot initialize VideoAspectRatio from invalid String value WIDE)"),
    (.startComposition, start("[\(channelDestination)]", extra: #","layout":{"pip":{"pipParticipantAttribute":"isPip","pipOffset":10,"pipPosition":"TOP_RIGHT"}}"#), nil),
    (.startComposition, start("[\(channelDestination)]", extra: #","layout":{"pip":{"pipOffset":-1}}"#), "layout.pip.pipOffset: must be at least 0 (got -1)"),
    (.startComposition, start("[\(channelDestination)]", extra: #","layout":{"pip":{"pipWidth":0}}"#), "layout.pip.pipWidth: must be at least 1 (got 0)"),
    (.startComposition, start("[\(channelDestination)]", extra: #","layout":{"pip":{"pipHeight":0}}"#), "layout.pip.pipHeight: must be at least 1 (got 0)"),
    (.startComposition, start("[\(channelDestination)]", extra: #","layout":{"pip":{"gridGap":-2}}"#), "layout.pip.gridGap: must be at least 0 (got -2)"),
    (.startComposition, start("[\(channelDestination)]", extra: #","layout":{"grid":{},"pip":{}}"#), "layout: specify either grid or pip, not both"),
    (.startComposition, #"{"stageArn":42,"destinations":[]}"#, "stageArn: expected a string"),
    (.startComposition, #"{"stageArn":null,"destinations":[]}"#, "stageArn: must not be null"),
    (.startComposition, #"{"stageArn":"#, "request body is not valid JSON"),
    (.startComposition, "", "stageArn: is required"),

    // Compositions: ARNs, list filters, pagination
    (.stopComposition, #"{"arn":"\#(composition)"}"#, nil),
    (.stopComposition, #"{"arn":"\#(stage)"}"#,
     "arn: '\(stage)' is not a valid composition ARN (expected arn:aws:ivs:<region>:<account-id>:composition/<id>, at most 128 characters)"),
    (.getComposition, #"{"arn":"\#(composition)"}"#, nil),
    (.getComposition, "{}", "arn: is required"),
    (.listCompositions, "", nil),
    (.listCompositions, #"{"filterByStageArn":"\#(stage)","filterByEncoderConfigurationArn":"\#(encoder)","maxResults":100,"nextToken":"djE6YQ=="}"#, nil),
    (.listCompositions, #"{"filterByStageArn":"\#(encoder)"}"#,
     "filterByStageArn: '\(encoder)' is not a valid stage ARN (expected arn:aws:ivs:<region>:<account-id>:stage/<id>, at most 128 characters)"),
    (.listCompositions, #"{"filterByEncoderConfigurationArn":"\#(stage)"}"#,
     "filterByEncoderConfigurationArn: '\(stage)' is not a valid encoder-configuration ARN (expected arn:aws:ivs:<region>:<account-id>:encoder-configuration/<id>, at most 128 characters)"),
    (.listCompositions, #"{"maxResults":0}"#, "maxResults: must be between 1 and 100 (got 0)"),
    (.listCompositions, #"{"maxResults":101}"#, "maxResults: must be between 1 and 100 (got 101)"),
    (.listCompositions, #"{"nextToken":"a b"}"#, "nextToken: must match [a-zA-Z0-9+/=_-]*"),
    (.listCompositions, #"{"nextToken":"\#(String(repeating: "a", count: 1025))"}"#, "nextToken: length must be between 0 and 1024 characters (got 1025)"),

    // Encoder configurations
    (.createEncoderConfiguration, "{}", nil),
    (.createEncoderConfiguration, #"{"name":"SquareVideo","video":{"width":1080,"height":1080,"framerate":30,"bitrate":3500000}}"#, nil),
    (.createEncoderConfiguration, #"{"name":"bad name"}"#, "name: 'bad name' must match [a-zA-Z0-9-_]*"),
    (.createEncoderConfiguration, #"{"name":"\#(String(repeating: "n", count: 129))"}"#, "name: length must be between 0 and 128 characters (got 129)"),
    (.createEncoderConfiguration, #"{"video":{"width":2,"height":2}}"#, nil),
    (.createEncoderConfiguration, #"{"video":{"width":1920,"height":1080}}"#, nil),
    (.createEncoderConfiguration, #"{"video":{"width":1080,"height":1920}}"#, nil),
    (.createEncoderConfiguration, #"{"video":{"width":0}}"#, "video.width: must be between 2 and 1920 (got 0)"),
    (.createEncoderConfiguration, #"{"video":{"width":1922}}"#, "video.width: must be between 2 and 1920 (got 1922)"),
    (.createEncoderConfiguration, #"{"video":{"width":641}}"#, "video.width: must be an even number (got 641)"),
    (.createEncoderConfiguration, #"{"video":{"height":1}}"#, "video.height: must be between 2 and 1920 (got 1)"),
    (.createEncoderConfiguration, #"{"video":{"height":361}}"#, "video.height: must be an even number (got 361)"),
    (.createEncoderConfiguration, #"{"video":{"width":1920,"height":1082}}"#,
     "video: width x height must be at most 2073600 pixels (1920x1080 or 1080x1920); got 1920x1082 = 2077440"),
    (.createEncoderConfiguration, #"{"video":{"width":1920,"height":1920}}"#,
     "video: width x height must be at most 2073600 pixels (1920x1080 or 1080x1920); got 1920x1920 = 3686400"),
    (.createEncoderConfiguration, #"{"video":{"framerate":1}}"#, nil),
    (.createEncoderConfiguration, #"{"video":{"framerate":60}}"#, nil),
    (.createEncoderConfiguration, #"{"video":{"framerate":29.97}}"#, nil),
    (.createEncoderConfiguration, #"{"video":{"framerate":0.5}}"#, "video.framerate: must be between 1.0 and 60.0 (got 0.5)"),
    (.createEncoderConfiguration, #"{"video":{"framerate":61}}"#, "video.framerate: must be between 1.0 and 60.0 (got 61.0)"),
    (.createEncoderConfiguration, #"{"video":{"bitrate":1}}"#, nil),
    (.createEncoderConfiguration, #"{"video":{"bitrate":8500000}}"#, nil),
    (.createEncoderConfiguration, #"{"video":{"bitrate":0}}"#, "video.bitrate: must be between 1 and 8500000 (got 0)"),
    (.createEncoderConfiguration, #"{"video":{"bitrate":8500001}}"#, "video.bitrate: must be between 1 and 8500000 (got 8500001)"),
    (.createEncoderConfiguration, #"{"video":{"bitrate":"fast"}}"#, "video.bitrate: expected an integer"),
    (.getEncoderConfiguration, #"{"arn":"\#(encoder)"}"#, nil),
    (.deleteEncoderConfiguration, #"{"arn":"\#(storage)"}"#,
     "arn: '\(storage)' is not a valid encoder-configuration ARN (expected arn:aws:ivs:<region>:<account-id>:encoder-configuration/<id>, at most 128 characters)"),
    (.listEncoderConfigurations, #"{"maxResults":1}"#, nil),
    (.listEncoderConfigurations, #"{"maxResults":-5}"#, "maxResults: must be between 1 and 100 (got -5)"),

    // Storage configurations
    (.createStorageConfiguration, #"{"name":"rec","s3":{"bucketName":"my-bucket.v2"}}"#, nil),
    (.createStorageConfiguration, #"{"name":"rec"}"#, "s3: is required"),
    (.createStorageConfiguration, #"{"s3":{"bucketName":"ab"}}"#, "s3.bucketName: length must be between 3 and 63 characters (got 2)"),
    (.createStorageConfiguration, #"{"s3":{"bucketName":"\#(String(repeating: "b", count: 64))"}}"#, "s3.bucketName: length must be between 3 and 63 characters (got 64)"),
    (.createStorageConfiguration, #"{"s3":{"bucketName":"My_Bucket"}}"#, "s3.bucketName: 'My_Bucket' must match [a-z0-9-.]+"),
    (.getStorageConfiguration, #"{"arn":"\#(storage)"}"#, nil),
    (.deleteStorageConfiguration, #"{"arn":"x"}"#,
     "arn: 'x' is not a valid storage-configuration ARN (expected arn:aws:ivs:<region>:<account-id>:storage-configuration/<id>, at most 128 characters)"),
    (.listStorageConfigurations, #"{"maxResults":100}"#, nil),
    (.listStorageConfigurations, #"{"maxResults":1000}"#, "maxResults: must be between 1 and 100 (got 1000)"),

    // Stages
    (.createStage, #"{"name":"stage-1","tags":{"a":"b"},"participantTokenConfigurations":[{"userId":"u","duration":20160,"capabilities":["PUBLISH","SUBSCRIBE"],"attributes":{"isFeatured":"true"}}]}"#, nil),
    (.createStage, #"{"name":"stage 1"}"#, "name: 'stage 1' must match [a-zA-Z0-9-_]*"),
    (.createStage, #"{"participantTokenConfigurations":[{"duration":0}]}"#, "participantTokenConfigurations[0].duration: must be between 1 and 20160 (got 0)"),
    (.createStage, #"{"participantTokenConfigurations":[\#((1...13).map { _ in "{}" }.joined(separator: ","))]}"#,
     "participantTokenConfigurations: must contain between 0 and 12 items (got 13)"),
    (.createStage, #"{"participantTokenConfigurations":[{"capabilities":["WATCH"]}]}"#,
     "participantTokenConfigurations[0].capabilities[0]: invalid value (Cannot initialize ParticipantTokenCapability from invalid String value WATCH)"),
    (.createStage, #"{"autoParticipantRecordingConfiguration":{"storageConfigurationArn":""}}"#, nil),
    (.createStage, #"{"autoParticipantRecordingConfiguration":{"storageConfigurationArn":"\#(storage)","recordingReconnectWindowSeconds":301}}"#,
     "autoParticipantRecordingConfiguration.recordingReconnectWindowSeconds: must be between 0 and 300 (got 301)"),
    (.getStage, #"{"arn":"\#(stage)"}"#, nil),
    // StartParticipantReplication: the model's ReconnectWindowSeconds is 0...300.
    (.startParticipantReplication, replication(window: 300), nil),
    (.startParticipantReplication, replication(window: 61), nil),
    (.startParticipantReplication, replication(window: 301), "reconnectWindowSeconds: must be between 0 and 300 (got 301)"),
    (.startParticipantReplication, replication(window: -1), "reconnectWindowSeconds: must be between 0 and 300 (got -1)"),
    (.deleteStage, #"{"arn":"\#(composition)"}"#,
     "arn: '\(composition)' is not a valid stage ARN (expected arn:aws:ivs:<region>:<account-id>:stage/<id>, at most 128 characters)"),
    (.listStages, #"{"maxResults":50}"#, nil),
    (.listStages, #"{"maxResults":101}"#, "maxResults: must be between 1 and 100 (got 101)"),

    // Tagging
    (.tagResource, #"{"tags":{"team":"video"}}"#, nil),
    (.tagResource, "{}", "tags: is required"),
    (.tagResource, #"{"tags":{"":"x"}}"#, "tags: tag key '' must be 1 to 128 characters"),
    // UpdateComposition (extension): the layout as StartComposition checks it, a transition, audio
    (.updateComposition, #"{"arn":"\#(composition)","layout":{"pip":{}},"transitionMs":300}"#, nil),
    (.updateComposition, #"{"arn":"\#(composition)","audio":{"p-1":{"gain":0.5},"p-2":{"muted":true}}}"#, nil),
    (.updateComposition, #"{"arn":"\#(stage)","layout":{"grid":{}}}"#,
     "arn: 'arn:aws:ivs:us-east-1:123456789012:stage/8faHz1SQp0ik' is not a valid composition ARN (expected arn:aws:ivs:<region>:<account-id>:composition/<id>, at most 128 characters)"),
    (.updateComposition, #"{"arn":"\#(composition)"}"#, "layout: give a layout, audio settings or overlays to change"),
    (.updateComposition, #"{"arn":"\#(composition)","layout":{"pip":{"pipWidth":0}}}"#, "layout.pip.pipWidth: must be at least 1 (got 0)"),
    (.updateComposition, #"{"arn":"\#(composition)","layout":{"grid":{},"pip":{}}}"#, "layout: specify either grid or pip, not both"),
    (.updateComposition, #"{"arn":"\#(composition)","layout":{"grid":{}},"transitionMs":2001}"#,
     "transitionMs: must be between 0 and 2000 (got 2001)"),
    (.updateComposition, #"{"arn":"\#(composition)","layout":{"grid":{}, "transitionMs":-1}}"#,
     "layout.transitionMs: must be between 0 and 2000 (got -1)"),
    (.updateComposition, #"{"arn":"\#(composition)","transitionMs":300,"audio":{}}"#, "transitionMs: applies to a layout: give one"),
    (.updateComposition, #"{"arn":"\#(composition)","audio":{"p-1":{"gain":2.5}}}"#, "audio.p-1.gain: must be between 0 and 2 (got 2.5)"),
    (.updateComposition, #"{"arn":"\#(composition)","audio":{"p-1":{"gain":-0.1}}}"#, "audio.p-1.gain: must be between 0 and 2 (got -0.1)"),
    (.updateComposition, #"{"arn":"\#(composition)","audio":{"p 1":{"gain":1}}}"#, "audio.'p 1': 'p 1' must match [a-zA-Z0-9-]*"),
    (.startComposition, start("[\(channelDestination)]", extra: #","audio":{"p-1":{"gain":3}}"#),
     "audio.p-1.gain: must be between 0 and 2 (got 3.0)"),
    // The overlays extension field: alone it is a change; its shape is the Layout module's.
    (.updateComposition, #"{"arn":"\#(composition)","overlays":{}}"#, nil),
    (.updateComposition, #"{"arn":"\#(composition)","overlays":{"banners":[{"id":"title","text":"Live","visible":false}]}}"#, nil),
    (.updateComposition, #"{"arn":"\#(composition)","overlays":{"banners":[{"id":"title","text":"Live","transitionMs":5001}]}}"#,
     "overlays.banners[0].transitionMs: must be between 0 and 5000 (got 5001)"),
    (.updateComposition, #"{"arn":"\#(composition)","overlays":{"banners":[{"id":"a","text":"x"},{"id":"a","text":"y"}]}}"#,
     "overlays.banners[1].id: 'a' is already the id of banners[0]"),
    (.updateComposition, #"{"arn":"\#(composition)","overlays":{"banners":[{"id":"a"}]}}"#, "overlays.banners[0].text: is required"),
    (.updateComposition, #"{"arn":"\#(composition)","overlays":{"images":[{"file":"logo.png","position":"MIDDLE"}]}}"#,
     "overlays.images[0].position: invalid value (Cannot initialize OverlayPosition from invalid String value MIDDLE)"),
    (.updateComposition, #"{"arn":"\#(composition)","transitionMs":300,"overlays":{}}"#, "transitionMs: applies to a layout: give one"),
    (.startComposition, start("[\(channelDestination)]", extra: #","overlays":{"labels":{"attribute":"name"},"images":[{"file":"logo.png","position":"TOP_RIGHT","margin":24}]}"#),
     nil),
    (.startComposition, start("[\(channelDestination)]", extra: #","overlays":{"images":[{"file":"../../etc/passwd"}]}"#),
     "overlays.images[0].file: '../../etc/passwd' must not contain a .. component"),
    (.startComposition, start("[\(channelDestination)]", extra: #","overlays":{"slate":{"text":"\#(String(repeating: "x", count: 501))"}}"#),
     "overlays.slate.text: must be 1 to 500 bytes of UTF-8 (got 501)"),
    (.updateComposition, #"{"arn":"\#(composition)","layout":{"grid":{"featured":"ACTIVE_SPEAKER","activeSpeakerHoldMs":1000}}}"#, nil),
    (.updateComposition, #"{"arn":"\#(composition)","layout":{"pip":{"featured":"ACTIVE_SPEAKER","activeSpeakerMinSpeechMs":60001}}}"#,
     "layout.pip.activeSpeakerMinSpeechMs: must be between 0 and 60000 (got 60001)"),
    (.updateComposition, #"{"arn":"\#(composition)","layout":{"grid":{"featured":"LOUDEST"}}}"#,
     "layout.grid.featured: invalid value (Cannot initialize FeaturedSelection from invalid String value LOUDEST)"),
    // UpdateParticipant (extension): a stage, a participant, attributes within 1 KB
    (.updateParticipant, #"{"stageArn":"\#(stage)","participantId":"AbCd1234","attributes":{"featured":"true"}}"#, nil),
    (.updateParticipant, #"{"stageArn":"\#(stage)","participantId":"AbCd1234"}"#, "attributes: is required"),
    (.updateParticipant, #"{"stageArn":"\#(stage)","participantId":"a/b","attributes":{}}"#, "participantId: 'a/b' must match [a-zA-Z0-9-]*"),
    (.updateParticipant, #"{"stageArn":"\#(stage)","participantId":"AbCd1234","attributes":{"k":"\#(String(repeating: "v", count: 1100))"}}"#,
     "attributes: keys and values may total at most 1024 bytes (got 1101)"),
]

@Suite struct ValidationTests {
    @Test(arguments: cases.indices)
    func validationRule(index: Int) {
        let (operation, body, expected) = cases[index]
        #expect(check(operation, body) == expected, "\(operation.name) \(body)")
    }

    @Test func tagPathOperations() throws {
        let valid = "arn:aws:ivs:us-east-1:123456789012:composition/abc"
        try UntagResourceRequest(resourceArn: valid, tagKeys: ["a"]).validate()
        try ListTagsForResourceRequest(resourceArn: valid).validate()
        #expect(throws: APIError.validation("resourceArn: 'arn:aws:ivs:us-east-1:123456789012:foo/abc' is not a valid IVS resource ARN (expected arn:aws:ivs:<region>:<account-id>:<resource-type>/<id>, at most 128 characters)")) {
            try ListTagsForResourceRequest(resourceArn: "arn:aws:ivs:us-east-1:123456789012:foo/abc").validate()
        }
        #expect(throws: APIError.validation("tagKeys: must contain between 0 and 50 items (got 51)")) {
            try UntagResourceRequest(resourceArn: valid, tagKeys: (1...51).map { "k\($0)" }).validate()
        }
        #expect(throws: APIError.validation("tagKeys: tag key '' must be 1 to 128 characters")) {
            try UntagResourceRequest(resourceArn: valid, tagKeys: [""]).validate()
        }
    }

    @Test func layoutHookRunsAfterModelChecks() {
        let options = ValidationOptions(layoutCheck: { layout in
            layout.pip?.pipWidth.map { $0 > 1920 ? "pip.pipWidth: wider than the canvas" : nil } ?? nil
        })
        let body = start("[\(channelDestination)]", extra: #","layout":{"pip":{"pipWidth":4000}}"#)
        #expect(check(.startComposition, body, options: options) == "layout.pip.pipWidth: wider than the canvas")
        #expect(check(.startComposition, body) == nil)
    }
}
