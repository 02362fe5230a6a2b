// The RTMP handshake, both sides. C0/S0 is the version byte (3), C1/S1 and C2/S2 are
// 1536-byte blocks. Flash-era clients (and FFmpeg) put an HMAC-SHA256 digest into C1 and
// expect one back in S1/S2 (the "complex" handshake); everything else gets the simple one.
// HMAC and randomness are injected so this file stays pure and deterministic in tests.

/// Where the 32-byte digest sits in a C1/S1 block. Scheme 0 puts the digest part first
/// (its offset bytes at 8...11), scheme 1 puts the key part first (offset bytes at 772...775).
public enum RTMPDigestScheme: Int, Equatable, Sendable, CaseIterable {
    case scheme0 = 0
    case scheme1 = 1
}

/// Which handshake a connection used; for logs.
public enum RTMPHandshakeVariant: Equatable, Sendable {
    case simple
    case digest(RTMPDigestScheme)
}

/// What the owner of a handshake does next.
public enum RTMPHandshakeAction: Equatable, Sendable {
    /// Write these bytes to the peer.
    case send([UInt8])
    /// The handshake is over; `leftover` are the first chunk-stream bytes that came with the
    /// last handshake block and belong to the chunk decoder.
    case completed(leftover: [UInt8])
}

/// Why a handshake failed.
public enum RTMPHandshakeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// C0/S0 asked for a version other than 3 (6 would be RTMPE, which we do not speak).
    case unsupportedVersion(UInt8)
    /// The server's S1 carried a valid digest but its S2 did not answer our C1's digest.
    case serverResponseMismatch
    /// Bytes arrived after the handshake had completed; they belong to the chunk stream.
    case alreadyComplete

    public var description: String {
        switch self {
        case .unsupportedVersion(let version): return "unsupported RTMP version \(version)"
        case .serverResponseMismatch: return "server handshake digest does not match"
        case .alreadyComplete: return "handshake already complete"
        }
    }
}

/// HMAC-SHA256(key, data); supplied by the owner (swift-crypto in the server, a small
/// test implementation in the tests).
public typealias RTMPHMACSHA256 = @Sendable (_ key: [UInt8], _ data: [UInt8]) -> [UInt8]
/// Fills the buffer with random bytes. The handshake's randomness only has to look random
/// to the peer; it protects nothing.
public typealias RTMPRandomFill = @Sendable (_ buffer: inout [UInt8]) -> Void

public enum RTMPHandshake {
    /// Size of C1, C2, S1 and S2.
    public static let blockSize = 1536
    public static let version: UInt8 = 3

    /// The system generator; fine for handshake padding.
    public static let systemRandom: RTMPRandomFill = { buffer in
        var generator = SystemRandomNumberGenerator()
        for index in buffer.indices {
            buffer[index] = generator.next()
        }
    }

    static let digestLength = 32
    /// Shared tail of both Adobe keys.
    private static let keyTail: [UInt8] = [
        0xF0, 0xEE, 0xC2, 0x4A, 0x80, 0x68, 0xBE, 0xE8, 0x2E, 0x00, 0xD0, 0xD1, 0x02, 0x9E, 0x7E, 0x57,
        0x6E, 0xEC, 0x5D, 0x2D, 0x29, 0x80, 0x6F, 0xAB, 0x93, 0xB8, 0xE6, 0x36, 0xCF, 0xEB, 0x31, 0xAE,
    ]
    /// "Genuine Adobe Flash Player 001" (30 bytes) + tail: 62 bytes.
    static let clientFullKey: [UInt8] = Array("Genuine Adobe Flash Player 001".utf8) + keyTail
    /// "Genuine Adobe Flash Media Server 001" (36 bytes) + tail: 68 bytes.
    static let serverFullKey: [UInt8] = Array("Genuine Adobe Flash Media Server 001".utf8) + keyTail
    static var clientPartialKey: [UInt8] { Array(clientFullKey.prefix(30)) }
    static var serverPartialKey: [UInt8] { Array(serverFullKey.prefix(36)) }

    /// The version we announce in a digest S1 (bytes 4...7), as FMS-style servers do.
    static let serverVersion: [UInt8] = [4, 5, 0, 1]
    /// The Flash Player version a digest C1 announces.
    static let clientVersion: [UInt8] = [9, 0, 124, 2]

    /// Offset of the digest in a 1536-byte block: the four bytes at the scheme's base,
    /// summed, modulo 728, past those four bytes.
    static func digestOffset(in block: [UInt8], scheme: RTMPDigestScheme) -> Int {
        let base = scheme == .scheme0 ? 8 : 772
        let sum = Int(block[base]) + Int(block[base + 1]) + Int(block[base + 2]) + Int(block[base + 3])
        return sum % 728 + base + 4
    }

    /// HMAC over the block without the 32 digest bytes.
    static func digest(of block: [UInt8], at offset: Int, key: [UInt8], hmac: RTMPHMACSHA256) -> [UInt8] {
        var message = Array(block[0..<offset])
        message.append(contentsOf: block[(offset + digestLength)...])
        return hmac(key, message)
    }

    /// The digest and its scheme when `block` carries a valid one for `key`.
    static func findDigest(in block: [UInt8], key: [UInt8], hmac: RTMPHMACSHA256) -> (digest: [UInt8], scheme: RTMPDigestScheme)? {
        // A zero version field is how simple-handshake clients say "no digest here".
        guard block[4...7].contains(where: { $0 != 0 }) else { return nil }
        for scheme in RTMPDigestScheme.allCases {
            let offset = digestOffset(in: block, scheme: scheme)
            let stored = Array(block[offset..<offset + digestLength])
            if digest(of: block, at: offset, key: key, hmac: hmac) == stored {
                return (stored, scheme)
            }
        }
        return nil
    }

    /// A block with time 0, the given version, random bytes and, when asked, a digest.
    static func makeBlock(version: [UInt8], digestKey: [UInt8]?, scheme: RTMPDigestScheme,
                          hmac: RTMPHMACSHA256, random: RTMPRandomFill) -> (block: [UInt8], digest: [UInt8]?) {
        var block = [UInt8](repeating: 0, count: blockSize)
        random(&block)
        block.replaceSubrange(0..<4, with: [0, 0, 0, 0])
        block.replaceSubrange(4..<8, with: version)
        guard let digestKey else { return (block, nil) }
        let offset = digestOffset(in: block, scheme: scheme)
        let digest = digest(of: block, at: offset, key: digestKey, hmac: hmac)
        block.replaceSubrange(offset..<offset + digestLength, with: digest)
        return (block, digest)
    }

    /// C2/S2 of the digest handshake: random bytes signed with a key derived from the
    /// peer's digest.
    static func makeSignedResponse(peerDigest: [UInt8], fullKey: [UInt8],
                                   hmac: RTMPHMACSHA256, random: RTMPRandomFill) -> [UInt8] {
        var block = [UInt8](repeating: 0, count: blockSize)
        random(&block)
        let signature = signedResponseDigest(block, peerDigest: peerDigest, fullKey: fullKey, hmac: hmac)
        block.replaceSubrange((blockSize - digestLength)..<blockSize, with: signature)
        return block
    }

    static func signedResponseDigest(_ block: [UInt8], peerDigest: [UInt8], fullKey: [UInt8],
                                     hmac: RTMPHMACSHA256) -> [UInt8] {
        let key = hmac(fullKey, peerDigest)
        return hmac(key, Array(block[0..<(blockSize - digestLength)]))
    }
}

/// Server side: C0+C1 in, S0+S1+S2 out, then C2 in. Bytes may arrive split anywhere.
public struct RTMPServerHandshake: Sendable {
    private enum State {
        case awaitingC0C1
        case awaitingC2(remaining: Int)
        case complete
        case failed(RTMPHandshakeError)
    }

    private var state: State = .awaitingC0C1
    /// C0+C1 as it arrives; kept outside `state` so appending does not copy it.
    private var c0c1: [UInt8] = []
    private let hmacSHA256: RTMPHMACSHA256
    private let random: RTMPRandomFill
    /// Set once C1 has been read.
    public private(set) var variant: RTMPHandshakeVariant?

    public init(hmacSHA256: @escaping RTMPHMACSHA256, random: @escaping RTMPRandomFill = RTMPHandshake.systemRandom) {
        self.hmacSHA256 = hmacSHA256
        self.random = random
    }

    public var isComplete: Bool {
        if case .complete = state { return true }
        return false
    }

    /// Bytes held while waiting for the rest of C0+C1 (C2 is counted, not kept).
    public var bufferedByteCount: Int { c0c1.count }

    public mutating func receive(_ bytes: some Collection<UInt8>) throws(RTMPHandshakeError) -> [RTMPHandshakeAction] {
        var input = ArraySlice(bytes)
        var actions: [RTMPHandshakeAction] = []
        while true {
            switch state {
            case .failed(let error):
                throw error
            case .complete:
                // Only reachable when called again after completion.
                throw .alreadyComplete
            case .awaitingC0C1:
                let needed = 1 + RTMPHandshake.blockSize - c0c1.count
                c0c1.append(contentsOf: input.prefix(needed))
                input = input.dropFirst(needed)
                guard c0c1.count == 1 + RTMPHandshake.blockSize else { return actions }
                let version = c0c1[0]
                let c1 = Array(c0c1[1...])
                c0c1 = []
                guard version == RTMPHandshake.version else {
                    state = .failed(.unsupportedVersion(version))
                    throw .unsupportedVersion(version)
                }
                actions.append(.send(respond(toC1: c1)))
                state = .awaitingC2(remaining: RTMPHandshake.blockSize)
            case .awaitingC2(let remaining):
                // C2 is not checked: many clients send something other than an echo of S1.
                let taken = min(remaining, input.count)
                input = input.dropFirst(taken)
                guard taken == remaining else {
                    state = .awaitingC2(remaining: remaining - taken)
                    return actions
                }
                state = .complete
                actions.append(.completed(leftover: Array(input)))
                return actions
            }
        }
    }

    /// S0+S1+S2 for this C1.
    private mutating func respond(toC1 c1: [UInt8]) -> [UInt8] {
        var response: [UInt8] = [RTMPHandshake.version]
        response.reserveCapacity(1 + 2 * RTMPHandshake.blockSize)
        if let (clientDigest, scheme) = RTMPHandshake.findDigest(in: c1, key: RTMPHandshake.clientPartialKey, hmac: hmacSHA256) {
            variant = .digest(scheme)
            // Answer in the client's scheme: some clients look for our digest only there.
            let s1 = RTMPHandshake.makeBlock(version: RTMPHandshake.serverVersion, digestKey: RTMPHandshake.serverPartialKey,
                                             scheme: scheme, hmac: hmacSHA256, random: random).block
            let s2 = RTMPHandshake.makeSignedResponse(peerDigest: clientDigest, fullKey: RTMPHandshake.serverFullKey,
                                                      hmac: hmacSHA256, random: random)
            response.append(contentsOf: s1)
            response.append(contentsOf: s2)
        } else {
            variant = .simple
            let s1 = RTMPHandshake.makeBlock(version: [0, 0, 0, 0], digestKey: nil, scheme: .scheme0,
                                             hmac: hmacSHA256, random: random).block
            response.append(contentsOf: s1)
            response.append(contentsOf: c1)
        }
        return response
    }
}

/// Client side, for our own test publisher: C0+C1 out, S0+S1+S2 in, C2 out. With the
/// digest variant it checks the server's S2 whenever the server answered with a digest,
/// and falls back to the simple handshake when it did not.
public struct RTMPClientHandshake: Sendable {
    private enum State {
        case idle
        case awaitingServer
        case complete
        case failed(RTMPHandshakeError)
    }

    private var state: State = .idle
    private let requestedVariant: RTMPHandshakeVariant
    private let hmacSHA256: RTMPHMACSHA256
    private let random: RTMPRandomFill
    private var c1: [UInt8] = []
    private var clientDigest: [UInt8]?
    /// S0+S1+S2 as it arrives.
    private var serverBytes: [UInt8] = []
    /// Whether the server's S1 carried a valid digest (known once S1 arrived).
    public private(set) var serverSentDigest = false

    public init(variant: RTMPHandshakeVariant, hmacSHA256: @escaping RTMPHMACSHA256,
                random: @escaping RTMPRandomFill = RTMPHandshake.systemRandom) {
        self.requestedVariant = variant
        self.hmacSHA256 = hmacSHA256
        self.random = random
    }

    public var isComplete: Bool {
        if case .complete = state { return true }
        return false
    }

    /// C0+C1. Call once, before `receive`.
    public mutating func start() -> [UInt8] {
        switch requestedVariant {
        case .simple:
            c1 = RTMPHandshake.makeBlock(version: [0, 0, 0, 0], digestKey: nil, scheme: .scheme0,
                                         hmac: hmacSHA256, random: random).block
        case .digest(let scheme):
            let made = RTMPHandshake.makeBlock(version: RTMPHandshake.clientVersion, digestKey: RTMPHandshake.clientPartialKey,
                                               scheme: scheme, hmac: hmacSHA256, random: random)
            c1 = made.block
            clientDigest = made.digest
        }
        state = .awaitingServer
        return [RTMPHandshake.version] + c1
    }

    public mutating func receive(_ bytes: some Collection<UInt8>) throws(RTMPHandshakeError) -> [RTMPHandshakeAction] {
        switch state {
        case .idle:
            // Nothing was sent yet; the server cannot have answered.
            return []
        case .failed(let error):
            throw error
        case .complete:
            throw .alreadyComplete
        case .awaitingServer:
            let total = 1 + 2 * RTMPHandshake.blockSize
            let input = Array(bytes)
            let taken = min(total - serverBytes.count, input.count)
            serverBytes.append(contentsOf: input[0..<taken])
            guard serverBytes.count == total else { return [] }
            let buffer = serverBytes
            serverBytes = []
            guard buffer[0] == RTMPHandshake.version else {
                state = .failed(.unsupportedVersion(buffer[0]))
                throw .unsupportedVersion(buffer[0])
            }
            let s1 = Array(buffer[1...RTMPHandshake.blockSize])
            let s2 = Array(buffer[(1 + RTMPHandshake.blockSize)...])
            let c2: [UInt8]
            if let clientDigest,
               let (serverDigest, _) = RTMPHandshake.findDigest(in: s1, key: RTMPHandshake.serverPartialKey, hmac: hmacSHA256) {
                serverSentDigest = true
                let expected = RTMPHandshake.signedResponseDigest(s2, peerDigest: clientDigest,
                                                                  fullKey: RTMPHandshake.serverFullKey, hmac: hmacSHA256)
                guard Array(s2.suffix(RTMPHandshake.digestLength)) == expected else {
                    state = .failed(.serverResponseMismatch)
                    throw .serverResponseMismatch
                }
                c2 = RTMPHandshake.makeSignedResponse(peerDigest: serverDigest, fullKey: RTMPHandshake.clientFullKey,
                                                      hmac: hmacSHA256, random: random)
            } else {
                c2 = s1
            }
            state = .complete
            return [.send(c2), .completed(leftover: Array(input[taken...]))]
        }
    }
}

extension RTMPHandshake {
    /// Checks a C2 of the digest handshake against the server's S1 digest; for tests and
    /// logs (the server does not insist on it, as deployed servers do not).
    public static func verifyDigestC2(_ c2: [UInt8], s1: [UInt8], hmacSHA256: RTMPHMACSHA256) -> Bool {
        guard c2.count == RTMPHandshake.blockSize, s1.count == RTMPHandshake.blockSize,
              let (serverDigest, _) = RTMPHandshake.findDigest(in: s1, key: RTMPHandshake.serverPartialKey, hmac: hmacSHA256)
        else { return false }
        let expected = RTMPHandshake.signedResponseDigest(c2, peerDigest: serverDigest, fullKey: RTMPHandshake.clientFullKey,
                                                          hmac: hmacSHA256)
        return Array(c2.suffix(RTMPHandshake.digestLength)) == expected
    }
}
