// Whole-session fuzz targets: each takes one input (bytes from libFuzzer, or a corpus file
// replayed by `make test`) and drives a real piece of the daemon with it — an RTMP publisher
// connection into a live stage, a WHIP publisher's media, a WHEP viewer's RTCP, STUN and SDP, the control API's
// request bodies. A trap, or state beyond its configured bound, is a finding: the targets
// check the bounds themselves (`FuzzBound`), and libFuzzer's -malloc_limit_mb and
// -rss_limit_mb catch what they cannot see.

public enum FuzzTarget: String, CaseIterable, Sendable {
    /// The pure RTMP core: a server session on its own, and each parser (AMF0, FLV, AVC, AAC).
    case rtmpParsers = "rtmp-parsers"
    /// Handshake → connect → publish → media, through the NIO connection handler and the
    /// forwarder into a LivePublisher on a manual clock, as one connection of the daemon.
    case rtmpSession = "rtmp-session"
    /// An offer, then decrypted RTP/RTCP datagrams through PublisherMediaReceiver (sender
    /// clocks, depacketizers, NACK, simulcast) and the forwarder into a LivePublisher.
    case whipMedia = "whip-media"
    /// A WHEP viewer's offer, then composition frames out and its hostile RTCP in, through
    /// the outlet its session drains (pacer, NACK answers, reports, keyframe requests).
    case whepViewer = "whep-viewer"
    /// STUN datagrams into the ICE-lite agent, and SDP offers into the negotiator.
    case stunSDP = "stun-sdp"
    /// Each operation's JSON body through decoding and validation, and a composition's
    /// layout planned from what validated.
    case apiBodies = "api-bodies"

    /// Runs one input; says how far it got, so tests can check that seeds reach deep.
    @discardableResult
    public func run(_ input: [UInt8]) -> FuzzReach {
        switch self {
        case .rtmpParsers: RTMPParsersTarget.run(input)
        case .rtmpSession: RTMPSessionTarget.run(input)
        case .whipMedia: WHIPMediaTarget.run(input)
        case .whepViewer: WHEPViewerTarget.run(input)
        case .stunSDP: SignallingTarget.run(input)
        case .apiBodies: APIBodiesTarget.run(input)
        }
    }
}

/// How far one input got through its target.
public struct FuzzReach: Equatable, Sendable {
    /// RTMP: publishes admitted. STUN: the agent connected. SDP, API: the input was accepted.
    public var accepted = 0
    /// Media packets that reached the stage's composition queue (RTMP, WHIP), or RTMP media
    /// messages parsed (rtmp-parsers).
    public var mediaPackets = 0

    public init(accepted: Int = 0, mediaPackets: Int = 0) {
        self.accepted = accepted
        self.mediaPackets = mediaPackets
    }
}

/// A bound a target checks after each step: breaking it stops the fuzzer with the input.
func FuzzBound(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
               file: StaticString = #fileID, line: UInt = #line) {
    if !condition() { fatalError("bound exceeded: \(message())", file: file, line: line) }
}

/// Reads an input as a script: fields in order, zero once the bytes run out, so that every
/// input is a valid script and mutations stay meaningful.
struct FuzzReader {
    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset >= bytes.count }
    var remaining: Int { max(0, bytes.count - offset) }

    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint16() -> UInt16 { UInt16(byte()) << 8 | UInt16(byte()) }

    /// Up to `count` bytes (fewer at the end).
    mutating func bytes(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, offset + max(0, count))
        defer { offset = max(offset, end) }
        return offset < end ? Array(bytes[offset..<end]) : []
    }

    /// A field written as a 16-bit length and that many bytes.
    mutating func lengthPrefixed() -> [UInt8] { bytes(Int(uint16())) }

    mutating func rest() -> [UInt8] { bytes(remaining) }
}

/// Writes inputs in the reader's format (seed corpora, tests).
public struct FuzzInputWriter {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    public mutating func byte(_ value: UInt8) { bytes.append(value) }

    public mutating func uint16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(truncatingIfNeeded: value)] }

    public mutating func raw(_ data: [UInt8]) { bytes += data }

    public mutating func lengthPrefixed(_ data: [UInt8]) {
        precondition(data.count <= Int(UInt16.max))
        uint16(UInt16(data.count))
        bytes += data
    }
}
