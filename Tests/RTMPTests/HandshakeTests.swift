// Handshake: both variants in every byte split, against our client and against FFmpeg's
// real C0+C1 (HMAC-SHA256 from swift-crypto, injected as the server does).
@testable import RTMP
import TestSupport
import Testing

struct HandshakeTests {
    static let serverRandom = seededRandomFill(77)

    func makeServer() -> RTMPServerHandshake {
        RTMPServerHandshake(hmacSHA256: testHMACSHA256, random: Self.serverRandom)
    }

    /// Runs client and server against each other, feeding each side in the given pieces.
    func converse(variant: RTMPHandshakeVariant, split: (([UInt8]) -> [ArraySlice<UInt8>])) throws
        -> (server: RTMPServerHandshake, client: RTMPClientHandshake, s0s1s2: [UInt8], c2: [UInt8], leftover: [UInt8]) {
        var client = RTMPClientHandshake(variant: variant, hmacSHA256: testHMACSHA256, random: seededRandomFill(5))
        var server = makeServer()
        let firstChunk: [UInt8] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00]
        var serverOutput: [UInt8] = []
        for piece in split(client.start()) {
            for action in try server.receive(piece) {
                guard case .send(let bytes) = action else { Issue.record("unexpected \(action)"); continue }
                serverOutput += bytes
            }
        }
        #expect(serverOutput.count == 1 + 2 * 1536)
        var c2: [UInt8] = []
        var clientLeftover: [UInt8]?
        for piece in split(serverOutput) {
            for action in try client.receive(piece) {
                switch action {
                case .send(let bytes): c2 += bytes
                case .completed(let leftover): clientLeftover = leftover
                }
            }
        }
        #expect(clientLeftover == [])
        #expect(client.isComplete)
        // C2 and the first chunk (Set Chunk Size) arrive together, split anywhere.
        var serverLeftover: [UInt8] = []
        var completions = 0
        for piece in split(c2 + firstChunk) {
            if server.isComplete {
                serverLeftover += piece
                continue
            }
            for action in try server.receive(piece) {
                guard case .completed(let leftover) = action else { Issue.record("unexpected \(action)"); continue }
                completions += 1
                serverLeftover += leftover
            }
        }
        #expect(completions == 1)
        #expect(serverLeftover == firstChunk)
        return (server, client, serverOutput, c2, serverLeftover)
    }

    @Test("simple handshake: S2 echoes C1, S1 has a zero version, C2 echoes S1", arguments: [1, 7, 1536, 4000])
    func simpleHandshake(pieceSize: Int) throws {
        var client = RTMPClientHandshake(variant: .simple, hmacSHA256: testHMACSHA256, random: seededRandomFill(5))
        let c0c1 = client.start()
        #expect(c0c1[0] == 3 && c0c1.count == 1537)
        #expect(Array(c0c1[5...8]) == [0, 0, 0, 0])
        let result = try converse(variant: .simple) { bytes in
            stride(from: 0, to: bytes.count, by: pieceSize).map { bytes[$0..<min($0 + pieceSize, bytes.count)] }
        }
        #expect(result.server.variant == .simple)
        #expect(result.s0s1s2[0] == 3)
        #expect(Array(result.s0s1s2[5...8]) == [0, 0, 0, 0])
        #expect(Array(result.s0s1s2[1537...]) == Array(c0c1[1...]))
        #expect(result.c2 == Array(result.s0s1s2[1...1536]))
        #expect(!result.client.serverSentDigest)
    }

    @Test("digest handshake in both schemes: the server answers with digests the client verifies", arguments: RTMPDigestScheme.allCases)
    func digestHandshake(scheme: RTMPDigestScheme) throws {
        let result = try converse(variant: .digest(scheme)) { bytes in
            stride(from: 0, to: bytes.count, by: 1).map { bytes[$0..<$0 + 1] }
        }
        #expect(result.server.variant == .digest(scheme))
        #expect(result.client.serverSentDigest)
        let s1 = Array(result.s0s1s2[1...1536])
        #expect(Array(s1[4...7]) == [4, 5, 0, 1])
        let found = RTMPHandshake.findDigest(in: s1, key: RTMPHandshake.serverPartialKey, hmac: testHMACSHA256)
        #expect(found?.scheme == scheme)
        #expect(RTMPHandshake.verifyDigestC2(result.c2, s1: s1, hmacSHA256: testHMACSHA256))
        // A C2 with one bit flipped no longer verifies.
        var tampered = result.c2
        tampered[10] ^= 1
        #expect(!RTMPHandshake.verifyDigestC2(tampered, s1: s1, hmacSHA256: testHMACSHA256))
    }

    @Test("random splits (seeded) of both variants always complete with the same leftover")
    func randomSplitsComplete() throws {
        var generator = SeededGenerator(seed: 99)
        for round in 0..<40 {
            let variant: RTMPHandshakeVariant = round % 3 == 0 ? .simple : .digest(round % 2 == 0 ? .scheme0 : .scheme1)
            let maxPiece = [2, 50, 700, 5000][round % 4]
            _ = try converse(variant: variant) { bytes in randomSplits(bytes, maxPiece: maxPiece, using: &generator) }
        }
    }

    @Test("FFmpeg's real C1 carries a digest we recognise (scheme 0)")
    func ffmpegC1() throws {
        let recording = try Corpus.load("ffmpeg-5.1-publish.bin")
        var server = makeServer()
        let actions = try server.receive(recording.prefix(1537))
        #expect(actions.count == 1)
        #expect(server.variant == .digest(.scheme0))
        // The client half of the S2 check: FFmpeg would verify this S2 against its digest.
        let c1 = Array(recording[1...1536])
        guard case .send(let reply)? = actions.first,
              let clientDigest = RTMPHandshake.findDigest(in: c1, key: RTMPHandshake.clientPartialKey, hmac: testHMACSHA256)?.digest
        else { Issue.record("no reply"); return }
        let s2 = Array(reply[1537...])
        #expect(Array(s2.suffix(32)) == RTMPHandshake.signedResponseDigest(s2, peerDigest: clientDigest,
                                                                             fullKey: RTMPHandshake.serverFullKey, hmac: testHMACSHA256))
    }

    @Test("a C1 with a non-zero version but a wrong digest gets the simple handshake")
    func badDigestFallsBack() throws {
        var client = RTMPClientHandshake(variant: .digest(.scheme0), hmacSHA256: testHMACSHA256, random: seededRandomFill(5))
        var c0c1 = client.start()
        c0c1[1 + 100] ^= 0xFF  // either the digest itself or a byte it covers
        var server = makeServer()
        let actions = try server.receive(c0c1)
        #expect(server.variant == .simple)
        guard case .send(let reply)? = actions.first else { Issue.record("no reply"); return }
        #expect(Array(reply[1537...]) == Array(c0c1[1...]))
    }

    @Test("version other than 3 is an error, and the handshake stays failed")
    func wrongVersion() throws {
        var server = makeServer()
        #expect(throws: RTMPHandshakeError.unsupportedVersion(6)) { try server.receive([6] + [UInt8](repeating: 0, count: 1536)) }
        #expect(throws: RTMPHandshakeError.unsupportedVersion(6)) { try server.receive([0]) }
        // The version is only judged once C0+C1 is complete.
        var partial = makeServer()
        #expect(try partial.receive([0x47, 0x45, 0x54]) == [])
        #expect(partial.bufferedByteCount == 3)
    }

    @Test("a client rejects an S2 that does not answer its digest")
    func clientRejectsBadS2() throws {
        var client = RTMPClientHandshake(variant: .digest(.scheme1), hmacSHA256: testHMACSHA256, random: seededRandomFill(5))
        var server = makeServer()
        guard case .send(var reply)? = try server.receive(client.start()).first else { Issue.record("no reply"); return }
        reply[reply.count - 1] ^= 0x01
        #expect(throws: RTMPHandshakeError.serverResponseMismatch) { try client.receive(reply) }
        #expect(!client.isComplete)
    }

    @Test("bytes after completion are refused rather than lost")
    func afterCompletion() throws {
        var server = makeServer()
        _ = try server.receive([3] + [UInt8](repeating: 0, count: 1536 * 2))
        #expect(server.isComplete)
        #expect(throws: RTMPHandshakeError.alreadyComplete) { try server.receive([1]) }
    }
}
