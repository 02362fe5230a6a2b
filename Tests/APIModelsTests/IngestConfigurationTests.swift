// Ingest configurations: the bodies the AWS CLI sends, the responses as JSON, every model
// rule accepted and rejected, and stream keys against the model's pattern.
import APIModels
import Foundation
import Testing
import TestSupport

let ingestArn = "arn:aws:ivs:us-east-1:123456789012:ingest-configuration/AbCdEf123456"

func notAnARN(_ path: String, _ value: String, _ type: String) -> String {
    "\(path): '\(value)' is not a valid \(type) ARN (expected arn:aws:ivs:<region>:<account-id>:\(type)/<id>, at most 128 characters)"
}

/// Whether `text` matches `pattern` as a whole (ICU, whose `.` skips line breaks as Java's does):
/// an independent check of the hand-written matchers.
func wholeMatch(_ pattern: String, _ text: String) -> Bool {
    let regex = try! NSRegularExpression(pattern: #"\A(?:"# + pattern + #")\z"#)
    return regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
}

@Suite struct IngestConfigurationTests {
    static let attributes1024 = #"{"k":"\#(String(repeating: "v", count: 1023))"}"#
    static let cases: [(APIOperation, String, String?)] = [
        // CreateIngestConfiguration
        (.createIngestConfiguration, #"{"name": "ic1", "stageArn": "\#(stage)", "userId": "u1", "attributes": {"a": "b", "c": "d"}, "ingestProtocol": "RTMP", "insecureIngest": true, "tags": {"k": "v"}}"#, nil),
        (.createIngestConfiguration, #"{"ingestProtocol": "RTMPS", "redundantIngest": true}"#, nil),
        (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","insecureIngest":true}"#, nil),
        (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","insecureIngest":false}"#, nil),
        (.createIngestConfiguration, #"{"ingestProtocol":"RTMP","insecureIngest":false}"#,
         "insecureIngest: must be true when ingestProtocol is RTMP (plain RTMP is refused otherwise)"),
        (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","insecureIngest":"yes"}"#, "insecureIngest: expected a boolean"),
        (.createIngestConfiguration, #"{"ingestProtocol":"rtmps"}"#,
         "ingestProtocol: invalid value (Cannot initialize IngestProtocol from invalid String value rtmps)"),
        (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","name":"\#(String(repeating: "n", count: 128))"}"#, nil),
        (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","name":"\#(String(repeating: "n", count: 129))"}"#,
         "name: length must be between 0 and 128 characters (got 129)"),
        (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","name":"ok-name_1"}"#, nil),
        (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","name":"a.b"}"#, "name: 'a.b' must match [a-zA-Z0-9-_]*"),
        (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","stageArn":"\#(stage)x"}"#, nil),
        (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","stageArn":"\#(stage)/x"}"#, notAnARN("stageArn", stage + "/x", "stage")),
        (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","stageArn":" "}"#, notAnARN("stageArn", " ", "stage")),
        (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","userId":"\#(String(repeating: "ü", count: 128))"}"#, nil),
        (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","attributes":\#(attributes1024)}"#, nil),
        // 1 KB of UTF-8: "ü" is two bytes.
        (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","attributes":{"ü":"\#(String(repeating: "v", count: 1022))"}}"#, nil),
        (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","attributes":{"ü":"\#(String(repeating: "v", count: 1023))"}}"#,
         "attributes: keys and values may total at most 1024 bytes (got 1025)"),
        (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","tags":{\#((1...51).map { "\"k\($0)\":\"v\"" }.joined(separator: ","))}}"#,
         "tags: at most 50 tags are allowed (got 51)"),
        (.createIngestConfiguration, #"{"ingestProtocol":"RTMPS","tags":{"":"v"}}"#, "tags: tag key '' must be 1 to 128 characters"),

        // Get / Update / Delete
        (.getIngestConfiguration, "{}", "arn: is required"),
        (.getIngestConfiguration, #"{"arn":"\#(ingestArn.replacingOccurrences(of: "ingest-configuration", with: "ingest-configurations"))"}"#,
         notAnARN("arn", ingestArn.replacingOccurrences(of: "ingest-configuration", with: "ingest-configurations"), "ingest-configuration")),
        (.updateIngestConfiguration, #"{"arn": "\#(ingestArn)", "stageArn": ""}"#, nil),
        (.updateIngestConfiguration, #"{"arn":"\#(ingestArn)","redundantIngest":false}"#, nil),
        (.updateIngestConfiguration, #"{"arn":"\#(ingestArn)","stageArn":"\#(channel)"}"#, notAnARN("stageArn", channel, "stage")),
        (.updateIngestConfiguration, #"{"stageArn":""}"#, "arn: is required"),
        (.deleteIngestConfiguration, #"{"arn": "\#(ingestArn)", "force": true}"#, nil),
        (.deleteIngestConfiguration, #"{"arn":"\#(stage)"}"#, notAnARN("arn", stage, "ingest-configuration")),
        (.deleteIngestConfiguration, #"{"arn":"\#(ingestArn)","force":1}"#, "force: expected a boolean"),

        // List: one filter at a time
        (.listIngestConfigurations, "", nil),
        (.listIngestConfigurations, #"{"filterByState": "ACTIVE", "maxResults": 10}"#, nil),
        (.listIngestConfigurations, #"{"filterByStageArn":"\#(stage)","maxResults":1}"#, nil),
        (.listIngestConfigurations, #"{"filterByStageArn":""}"#, notAnARN("filterByStageArn", "", "stage")),
        (.listIngestConfigurations, #"{"filterByState":"BUSY"}"#,
         "filterByState: invalid value (Cannot initialize IngestConfigurationState from invalid String value BUSY)"),
        (.listIngestConfigurations, #"{"filterByStageArn":"\#(stage)","filterByState":"INACTIVE"}"#,
         "filterByState: only one filter (filterByStageArn or filterByState) can be used at a time"),
        (.listIngestConfigurations, #"{"maxResults":0}"#, "maxResults: must be between 1 and 100 (got 0)"),
        (.listIngestConfigurations, #"{"nextToken":"a b"}"#, "nextToken: must match [a-zA-Z0-9+/=_-]*"),
    ]

    @Test(arguments: cases.indices)
    func rule(index: Int) {
        let (operation, body, expected) = Self.cases[index]
        #expect(check(operation, body) == expected, "\(operation.name) \(body)")
    }

    @Test func cliBodyDecodesMemberForMember() throws {
        let body = #"{"name": "ic1", "stageArn": "\#(stage)", "userId": "u1", "attributes": {"a": "b", "c": "d"}, "ingestProtocol": "RTMP", "insecureIngest": true, "tags": {"k": "v"}}"#
        let request = try APIJSON.decodeRequest(CreateIngestConfigurationRequest.self, from: Data(body.utf8))
        #expect(request == CreateIngestConfigurationRequest(name: "ic1", stageArn: stage, userId: "u1", attributes: ["a": "b", "c": "d"],
                                                            ingestProtocol: .rtmp, insecureIngest: true, tags: ["k": "v"]))
        let update = try APIJSON.decodeRequest(UpdateIngestConfigurationRequest.self, from: Data(#"{"arn": "\#(ingestArn)", "stageArn": ""}"#.utf8))
        #expect(update == UpdateIngestConfigurationRequest(arn: ingestArn, stageArn: ""))
        let delete = try APIJSON.decodeRequest(DeleteIngestConfigurationRequest.self, from: Data(#"{"arn": "\#(ingestArn)", "force": true}"#.utf8))
        #expect(delete == DeleteIngestConfigurationRequest(arn: ingestArn, force: true))
        let list = try APIJSON.decodeRequest(ListIngestConfigurationsRequest.self, from: Data(#"{"filterByState": "ACTIVE", "maxResults": 10}"#.utf8))
        #expect(list == ListIngestConfigurationsRequest(filterByState: .active, maxResults: 10))
        // A round trip keeps every member.
        #expect(try APIJSON.decode(CreateIngestConfigurationRequest.self, from: APIJSON.encode(request)) == request)
    }

    @Test func responsesUseTheModelsMemberNames() throws {
        let key = "rt_123456789012_us-east-1_AbCdEf123456_" + String(repeating: "s", count: 32)
        let configuration = IngestConfiguration(name: "ic1", arn: ingestArn, ingestProtocol: .rtmps, streamKey: key, stageArn: stage,
                                                participantId: "xYz1c2d3e4f5", state: .inactive, userId: "u1", redundantIngest: false,
                                                attributes: ["a": "b"], tags: ["k": "v"])
        #expect(try APIJSON.encodeString(CreateIngestConfigurationResponse(ingestConfiguration: configuration))
            == #"{"ingestConfiguration":{"arn":"\#(ingestArn)","attributes":{"a":"b"},"ingestProtocol":"RTMPS","name":"ic1","participantId":"xYz1c2d3e4f5","redundantIngest":false,"stageArn":"\#(stage)","state":"INACTIVE","streamKey":"\#(key)","tags":{"k":"v"},"userId":"u1"}}"#)
        #expect(try APIJSON.encodeString(ListIngestConfigurationsResponse(ingestConfigurations: [configuration.summary], nextToken: "djE6eA=="))
            == #"{"ingestConfigurations":[{"arn":"\#(ingestArn)","ingestProtocol":"RTMPS","name":"ic1","participantId":"xYz1c2d3e4f5","redundantIngest":false,"stageArn":"\#(stage)","state":"INACTIVE","userId":"u1"}],"nextToken":"djE6eA=="}"#)

        // Redundant-ingest credentials are read (and kept), though this daemon issues none.
        let withCredentials = #"{"ingestConfiguration":{"arn":"\#(ingestArn)","ingestProtocol":"RTMPS","participantId":"p1","stageArn":"","state":"ACTIVE","streamKey":"\#(key)","redundantIngest":true,"redundantIngestCredentials":[{"participantId":"p2","streamKey":"\#(key)2"}]}}"#
        let decoded = try APIJSON.decode(GetIngestConfigurationResponse.self, from: Data(withCredentials.utf8))
        #expect(decoded.ingestConfiguration?.redundantIngestCredentials == [RedundantIngestCredential(participantId: "p2", streamKey: key + "2")])
        #expect(decoded.ingestConfiguration?.stageArn == "")
        #expect(try APIJSON.decode(GetIngestConfigurationResponse.self, from: APIJSON.encode(decoded)) == decoded)
        #expect(try APIJSON.encodeString(DeleteIngestConfigurationResponse()) == "{}")
    }
}

@Suite struct StreamKeyTests {
    static let pattern = "rt_[0-9]+_[a-z0-9-]+_[a-zA-Z0-9-]+_.+"

    @Test func generatedKeysMatchThePatternAndParseBack() throws {
        let arn = try #require(IVSARN(parsing: ingestArn))
        var a = SeededGenerator(seed: 2024)
        var b = SeededGenerator(seed: 2024)
        let key = StreamKey.generate(for: arn, using: &a)
        #expect(key == StreamKey.generate(account: "123456789012", region: "us-east-1", ingestConfigurationID: "AbCdEf123456", using: &b))
        #expect(key.description.hasPrefix("rt_123456789012_us-east-1_AbCdEf123456_"))
        #expect(key.secret.count == StreamKey.secretLength && key.secret.count == 32)
        #expect(key.secret.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) })
        #expect(wholeMatch(Self.pattern, key.description))
        #expect(StreamKey(parsing: key.description) == key)
        #expect(StreamKey.ingestConfigurationID(in: key.description) == "AbCdEf123456")
        #expect(!key.redacted.contains(key.secret))

        var seen: Set<String> = []
        for _ in 0..<200 {
            let next = StreamKey.generate(for: arn, using: &a)
            #expect(wholeMatch(Self.pattern, next.description))
            seen.insert(next.secret)
        }
        #expect(seen.count == 200)
    }

    @Test(arguments: [
        "rt_1_r_id_s", "rt_123456789012_us-east-1_AbC-12_x_y_z", "rt_0_a-1_-_ ", "rt_1_r_id_ü",
        "", "rt_", "rt_1_r_id_", "rt__r_id_s", "rt_1__id_s", "rt_1_r__s", "rt_1_R_id_s", "rt_1a_r_id_s", "rt_1_r_i.d_s",
        "RT_1_r_id_s", "xrt_1_r_id_s", "rt_1_r_id", "rt_1_r_id_line\nbreak", "rt_1_r_id_\r", "rt_1_r_id_a\u{2028}",
        "rt_1_r_id_\u{85}", "rt_1_r_id_a\n",
    ])
    func parserAgreesWithThePattern(text: String) {
        let parsed = StreamKey(parsing: text)
        #expect((parsed != nil) == wholeMatch(Self.pattern, text), "\(text.debugDescription)")
        #expect(StreamKey.ingestConfigurationID(in: text) == parsed?.ingestConfigurationID)
    }

    @Test func oversizedInputIsRefusedUnread() {
        let long = "rt_1_r_id_" + String(repeating: "s", count: StreamKey.maximumLength)
        #expect(StreamKey(parsing: long) == nil)
        let fits = "rt_1_r_id_" + String(repeating: "s", count: StreamKey.maximumLength - 10)
        #expect(StreamKey(parsing: fits)?.secret.count == StreamKey.maximumLength - 10)
    }
}
