// Participant tokens: the daemon's tokens round-trip; a customer's token (signed here with
// swift-crypto directly, the way any other ES384 signer would) verifies with its imported key;
// every refusal says what was wrong and keeps the claims only of genuine tokens.
import Crypto
import Foundation
import ParticipantTokens
import Testing

@Suite struct ParticipantTokensTests {
    static let stage = "arn:aws:ivs:us-east-1:123456789012:stage/abcdefABCDEF"
    static let keyArn = "arn:aws:ivs:us-east-1:123456789012:public-key/daemonKey0001"
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    func claims(participant: String = "participant1", issuedAt: Int64 = 1_800_000_000, lifetime: Int64 = 43_200,
                capabilities: Set<ParticipantCapability> = [.publish]) -> ParticipantTokenClaims {
        ParticipantTokenClaims(participantId: participant, userId: "alice", stageArn: Self.stage, stageId: "abcdefABCDEF",
                               eventsURL: "wss://events", whipURL: "http://127.0.0.1/whip/abcdefABCDEF", capabilities: capabilities,
                               attributes: ["role": "host"], issuedAt: issuedAt, expiresAt: issuedAt + lifetime)
    }

    func issuerAndVerifier() async throws -> (TokenIssuer, TokenVerifier) {
        let key = TokenSigningKey(arn: Self.keyArn)
        let publicKey = try P384.Signing.PublicKey(pemRepresentation: key.publicKeyPEM)
        return (await TokenIssuer(key: key), try await TokenVerifier(keys: [Self.keyArn: publicKey]))
    }

    @Test func roundTrip() async throws {
        let (issuer, verifier) = try await issuerAndVerifier()
        let token = try await issuer.issue(claims())
        let header = try #require(JSONSerialization.jsonObject(with: Self.decode(token.split(separator: ".")[0])) as? [String: String])
        #expect(header == ["alg": "ES384", "typ": "JWT", "kid": Self.keyArn])
        var expected = claims()
        expected.keyArn = Self.keyArn
        #expect(try await verifier.verify(token, stageArn: Self.stage, now: Self.now) == expected)
    }

    @Test func refusals() async throws {
        let (issuer, verifier) = try await issuerAndVerifier()
        func kind(_ token: String, stage: String = Self.stage, now: Date = Self.now) async -> TokenError? {
            do {
                _ = try await verifier.verify(token, stageArn: stage, now: now)
                return nil
            } catch { return error }
        }
        let good = try await issuer.issue(claims())
        let expired = await kind(good, now: Self.now.addingTimeInterval(43_201))
        #expect(expired?.kind == .expired && expired?.genuineClaims?.participantId == "participant1")
        #expect(await kind(good, stage: Self.stage + "x")?.kind == .wrongStage)
        #expect(await kind(try await issuer.issue(claims(issuedAt: 1_800_000_100)))?.kind == .notYetValid)
        #expect(await kind(try await issuer.issue(claims(lifetime: 15 * 86_400)))?.kind == .invalidClaims)
        #expect(await kind(try await issuer.issue(claims(participant: "bad id!")))?.kind == .invalidClaims)
        // Any signer may put any integers in iat and exp: exp - iat overflowing is a refusal, not a trap.
        var extreme = claims()
        extreme.issuedAt = .min
        extreme.expiresAt = .max
        #expect(await kind(try await issuer.issue(extreme))?.kind == .invalidClaims)
        // A changed payload: the signature no longer matches, and nothing of it is trusted.
        let parts = good.split(separator: ".").map(String.init)
        var payload = try #require(try JSONSerialization.jsonObject(with: Self.decode(parts[1])) as? [String: Any])
        payload["user_id"] = "mallory"
        let forged = [parts[0], Self.encode(try JSONSerialization.data(withJSONObject: payload)), parts[2]].joined(separator: ".")
        let tampered = await kind(forged)
        #expect(tampered?.kind == .badSignature && tampered?.genuineClaims == nil)
        for alg in ["none", "HS256", "ES256"] {
            let header = Self.encode(Data("{\"alg\":\"\(alg)\",\"typ\":\"JWT\",\"kid\":\"\(Self.keyArn)\"}".utf8))
            #expect(await kind([header, parts[1], parts[2]].joined(separator: "."))?.kind == .wrongAlgorithm, "\(alg)")
        }
        let unknown = Self.encode(Data("{\"alg\":\"ES384\",\"typ\":\"JWT\",\"kid\":\"arn:aws:ivs:us-east-1:1:public-key/other\"}".utf8))
        #expect(await kind([unknown, parts[1], parts[2]].joined(separator: "."))?.kind == .unknownKey)
        #expect(await kind("garbage")?.kind == .malformed)
        #expect(await kind(String(repeating: "a", count: 9000))?.kind == .malformed)
        // Messages never carry the token.
        #expect(!(tampered?.message.contains(parts[2]) ?? true))
    }

    @Test("a token signed elsewhere verifies with the imported public key")
    func customerKey() async throws {
        let customer = P384.Signing.PrivateKey()
        let pem = customer.publicKey.pemRepresentation
        let arn = "arn:aws:ivs:us-east-1:123456789012:public-key/customer0001"
        let verifier = try await TokenVerifier(keys: [arn: try PublicKeyPEM.parseP384(pem)])
        let header = Self.encode(Data("{\"alg\":\"ES384\",\"typ\":\"JWT\",\"kid\":\"\(arn)\"}".utf8))
        let body = Self.encode(Data("""
        {"exp":1800003600,"iat":1800000000,"jti":"customer-1","resource":"\(Self.stage)","topic":"abcdefABCDEF",\
        "events_url":"wss://e","whip_url":"http://w","capabilities":{"allow_publish":true},"version":"1.0"}
        """.utf8))
        let signature = try customer.signature(for: Data("\(header).\(body)".utf8))
        let token = "\(header).\(body).\(Self.encode(signature.rawRepresentation))"
        let verified = try await verifier.verify(token, stageArn: Self.stage, now: Self.now)
        #expect(verified.participantId == "customer-1" && verified.capabilities == [.publish] && verified.keyArn == arn)
        #expect(throws: TokenError.self) { try PublicKeyPEM.parseP384(P256.Signing.PrivateKey().publicKey.pemRepresentation) }
        #expect(throws: TokenError.self) { try PublicKeyPEM.parseP384(customer.pemRepresentation) }
        #expect(throws: TokenError.self) { try PublicKeyPEM.parseP384("garbage") }
    }

    @Test("the key store creates a 0600 key once, reloads it, and refuses a corrupt file")
    func keyStore() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokens-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try TokenKeyStore.loadOrCreate(directory: directory) { "arn:key/\($0.prefix(12))" }
        let path = directory + "/" + TokenKeyStore.fileName
        let mode = try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        let again = try TokenKeyStore.loadOrCreate(directory: directory) { "arn:key/\($0.prefix(12))" }
        #expect(again.arn == first.arn && again.publicKeyPEM == first.publicKeyPEM)
        #expect(!"\(first)".contains("PRIVATE"))
        try "not a key".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: TokenError.self) { try TokenKeyStore.loadOrCreate(directory: directory) { $0 } }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "not a key")
    }

    static func decode(_ part: some StringProtocol) -> Data {
        var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return Data(base64Encoded: text) ?? Data()
    }

    static func encode(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
