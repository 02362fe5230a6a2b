// WHIP credentials: CreateParticipantToken and the public-key operations, as the CLI sends
// them, their rules, and the PEM check against the model's pattern.
import APIModels
import Foundation
import Testing

let publicKeyArn = "arn:aws:ivs:us-west-2:123456789012:public-key/f99cde61-c2b0-4df3-8941-ca7d38acca1a"

/// An EC P-384 public key from `openssl ec -pubout`.
let p384PEM = """
    -----BEGIN PUBLIC KEY-----
    MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEHQxaGzPJrMy7KD8ej4cc7sT3J6LD5Lo4
    93b5k9KCchUfCzppyJhSRl+4s5hGhTTME24p1sRpmayw9p9JnwvQXGYd7P+UlguO
    GWfWxWGeqBa857wRIErOCpJnbRbPA+z2
    -----END PUBLIC KEY-----

    """

func jsonString(_ text: String) -> String {
    String(decoding: try! JSONEncoder().encode(text), as: UTF8.self)
}

@Suite struct ParticipantTokenTests {
    static let noPEM = "publicKeyMaterial: must contain a PEM public key (-----BEGIN PUBLIC KEY-----, base64 lines, -----END PUBLIC KEY-----)"
    static func token(_ extra: String) -> String { #"{"stageArn":"\#(stage)"\#(extra)}"# }
    static func importing(_ pem: String, _ extra: String = "") -> String { #"{"publicKeyMaterial":\#(jsonString(pem))\#(extra)}"# }

    static let cases: [(APIOperation, String, String?)] = [
        // CreateParticipantToken
        (.createParticipantToken, #"{"stageArn": "\#(stage)", "duration": 60, "userId": "u", "attributes": {"x": "y"}, "capabilities": ["PUBLISH"]}"#, nil),
        (.createParticipantToken, token(""), nil),
        (.createParticipantToken, "{}", "stageArn: is required"),
        (.createParticipantToken, #"{"stageArn":"\#(composition)"}"#, notAnARN("stageArn", composition, "stage")),
        (.createParticipantToken, token(#","duration":1"#), nil),
        (.createParticipantToken, token(#","duration":20160"#), nil),
        (.createParticipantToken, token(#","duration":0"#), "duration: must be between 1 and 20160 (got 0)"),
        (.createParticipantToken, token(#","duration":20161"#), "duration: must be between 1 and 20160 (got 20161)"),
        (.createParticipantToken, token(#","duration":"60""#), "duration: expected an integer"),
        (.createParticipantToken, token(#","userId":"\#(String(repeating: "u", count: 128))""#), nil),
        (.createParticipantToken, token(#","userId":"\#(String(repeating: "u", count: 129))""#),
         "userId: length must be between 0 and 128 characters (got 129)"),
        (.createParticipantToken, token(#","attributes":\#(IngestConfigurationTests.attributes1024)"#), nil),
        (.createParticipantToken, token(#","attributes":{"k":"v","k2":"\#(String(repeating: "v", count: 1021))"}"#),
         "attributes: keys and values may total at most 1024 bytes (got 1025)"),
        (.createParticipantToken, token(#","capabilities":[]"#), nil),
        (.createParticipantToken, token(#","capabilities":["PUBLISH","SUBSCRIBE"]"#), nil),
        (.createParticipantToken, token(#","capabilities":["PUBLISH","SUBSCRIBE","PUBLISH"]"#),
         "capabilities: must contain between 0 and 2 items (got 3)"),
        (.createParticipantToken, token(#","capabilities":["ADMIN"]"#),
         "capabilities[0]: invalid value (Cannot initialize ParticipantTokenCapability from invalid String value ADMIN)"),

        // ImportPublicKey
        (.importPublicKey, importing(p384PEM, #","name":"key1","tags":{"a":"b"}"#), nil),
        (.importPublicKey, importing(p384PEM.replacingOccurrences(of: "\n", with: "\r\n")), nil),
        (.importPublicKey, importing("comment\n" + p384PEM + "trailer"), nil),
        (.importPublicKey, importing("-----BEGIN PUBLIC KEY-----\nQQ==\n-----END PUBLIC KEY-----"), nil),
        (.importPublicKey, "{}", "publicKeyMaterial: is required"),
        (.importPublicKey, importing(""), noPEM),
        (.importPublicKey, importing("MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAE"), noPEM),
        (.importPublicKey, importing("-----BEGIN PUBLIC KEY-----\n\n-----END PUBLIC KEY-----"), noPEM),
        (.importPublicKey, importing("-----BEGIN PUBLIC KEY-----QQ==\n-----END PUBLIC KEY-----"), noPEM),
        (.importPublicKey, importing("-----BEGIN PUBLIC KEY-----\nQQ==-----END PUBLIC KEY-----"), noPEM),
        (.importPublicKey, importing("-----BEGIN PUBLIC KEY-----\nQQ*=\n-----END PUBLIC KEY-----"), noPEM),
        (.importPublicKey, importing("-----BEGIN PUBLIC KEY-----\nQQ==\n"), noPEM),
        (.importPublicKey, importing(p384PEM.replacingOccurrences(of: "PUBLIC KEY", with: "EC PRIVATE KEY")), noPEM),
        (.importPublicKey, importing(p384PEM, #","name":"my key""#), "name: 'my key' must match [a-zA-Z0-9-_]*"),
        (.importPublicKey, importing(p384PEM, #","name":"\#(String(repeating: "k", count: 129))""#),
         "name: length must be between 0 and 128 characters (got 129)"),
        (.importPublicKey, importing(p384PEM, #","tags":{\#((1...51).map { "\"k\($0)\":\"v\"" }.joined(separator: ","))}"#),
         "tags: at most 50 tags are allowed (got 51)"),

        // Get / Delete / List
        (.getPublicKey, #"{"arn":"\#(publicKeyArn)"}"#, nil),
        (.getPublicKey, #"{"arn":"\#(stage)"}"#, notAnARN("arn", stage, "public-key")),
        (.deletePublicKey, #"{"arn": "arn:aws:ivs:us-east-1:123456789012:public-key/f99cde61-c2b0-4df3-8941-ca7d38acca1a"}"#, nil),
        (.deletePublicKey, "{}", "arn: is required"),
        (.listPublicKeys, #"{"maxResults": 2}"#, nil),
        (.listPublicKeys, "", nil),
        (.listPublicKeys, #"{"maxResults":101}"#, "maxResults: must be between 1 and 100 (got 101)"),
        (.listPublicKeys, #"{"nextToken":"\#(String(repeating: "a", count: 1025))"}"#, "nextToken: length must be between 0 and 1024 characters (got 1025)"),
    ]

    @Test(arguments: cases.indices)
    func rule(index: Int) {
        let (operation, body, expected) = Self.cases[index]
        #expect(check(operation, body) == expected, "\(operation.name) \(body)")
    }

    /// The hand-written PEM check agrees with the model's pattern run by ICU (searched, as
    /// Smithy patterns are not anchored).
    @Test func pemCheckAgreesWithThePattern() throws {
        let pattern = try NSRegularExpression(
            pattern: #".*-----BEGIN PUBLIC KEY-----\r?\n([a-zA-Z0-9+/=\r\n]+)\r?\n-----END PUBLIC KEY-----(\r?\n)?.*"#)
        let begin = "-----BEGIN PUBLIC KEY-----", end = "-----END PUBLIC KEY-----"
        let samples = [
            p384PEM, p384PEM.replacingOccurrences(of: "\n", with: "\r\n"), "x\n" + p384PEM + "\ny",
            "\(begin)\nA\n\(end)", "\(begin)\n\n\n\(end)", "\(begin)\r\n\r\n\(end)", "\(begin)\n\r\n\(end)", "\(begin)\nA\r\n\(end)",
            "\(begin)\n\n\(end)", "\(begin)\r\n\(end)", "\(begin)\nA\(end)", "\(begin)\rA\n\(end)", "\(begin)\nA \n\(end)",
            "\(begin)\nA\n\(end)\(begin)", "\(begin)\n-\n\(end) \(begin)\nB\n\(end)", "\(begin)\n-\n\(end)",
            "\(begin)\nA\n\(end.dropLast())", "\(begin)\(begin)\nA\n\(end)", "\(begin)\nÄ\n\(end)", "",
        ]
        for sample in samples {
            let regexSays = pattern.firstMatch(in: sample, range: NSRange(sample.startIndex..., in: sample)) != nil
            let body = Data(Self.importing(sample).utf8)
            let accepted = (try? APIJSON.decodeRequest(ImportPublicKeyRequest.self, from: body)) != nil
            #expect(accepted == regexSays, "\(sample.debugDescription)")
        }
    }

    @Test func cliBodiesAndResponses() throws {
        let body = #"{"publicKeyMaterial": \#(jsonString(p384PEM)), "name": "key1", "tags": {"a": "b"}}"#
        let request = try APIJSON.decodeRequest(ImportPublicKeyRequest.self, from: Data(body.utf8))
        #expect(request == ImportPublicKeyRequest(publicKeyMaterial: p384PEM, name: "key1", tags: ["a": "b"]))
        let token = try APIJSON.decodeRequest(CreateParticipantTokenRequest.self, from: Data(
            #"{"stageArn": "\#(stage)", "duration": 60, "userId": "u", "attributes": {"x": "y"}, "capabilities": ["PUBLISH"]}"#.utf8))
        #expect(token == CreateParticipantTokenRequest(stageArn: stage, duration: 60, userId: "u", attributes: ["x": "y"], capabilities: [.publish]))
        #expect(CreateParticipantTokenRequest.defaultDuration == 720)
        #expect(CreateParticipantTokenRequest.defaultCapabilities == [.publish, .subscribe])

        let key = PublicKey(arn: publicKeyArn, name: "key1", publicKeyMaterial: "-----BEGIN PUBLIC KEY-----\nQQ==\n-----END PUBLIC KEY-----\n",
                            fingerprint: "12:ab", tags: ["a": "b"])
        #expect(try APIJSON.encodeString(ImportPublicKeyResponse(publicKey: key))
            == #"{"publicKey":{"arn":"\#(publicKeyArn)","fingerprint":"12:ab","name":"key1","publicKeyMaterial":"-----BEGIN PUBLIC KEY-----\nQQ==\n-----END PUBLIC KEY-----\n","tags":{"a":"b"}}}"#)
        #expect(try APIJSON.encodeString(ListPublicKeysResponse(publicKeys: [key.summary]))
            == #"{"publicKeys":[{"arn":"\#(publicKeyArn)","name":"key1","tags":{"a":"b"}}]}"#)
        #expect(try APIJSON.decode(GetPublicKeyResponse.self, from: APIJSON.encode(GetPublicKeyResponse(publicKey: key))).publicKey == key)
        #expect(try APIJSON.encodeString(DeletePublicKeyResponse()) == "{}")

        let issued = ParticipantToken(participantId: "p1", token: "eyJ...", userId: "u", attributes: ["x": "y"], duration: 60,
                                      capabilities: [.publish], expirationTime: APITimestamp(iso8601: "2024-05-01T11:00:00Z"))
        #expect(try APIJSON.encodeString(CreateParticipantTokenResponse(participantToken: issued))
            == #"{"participantToken":{"attributes":{"x":"y"},"capabilities":["PUBLISH"],"duration":60,"expirationTime":"2024-05-01T11:00:00Z","participantId":"p1","token":"eyJ...","userId":"u"}}"#)
    }
}
