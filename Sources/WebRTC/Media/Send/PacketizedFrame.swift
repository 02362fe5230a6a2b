// The RTP payloads of one access unit (a video frame, or an Opus packet), made once per
// composition and sent to every viewer: each viewer's RTPSendStream writes its own header
// (SSRC, sequence number, timestamp offset) before the same payload bytes. The payloads lie
// end to end in one array, so a frame costs two allocations whatever its packet count, and
// the viewers' queues and send histories share it instead of copying it.

public import MediaCore

public struct PacketizedFrame: Sendable, Equatable {
    public let codec: WebRTCCodec
    /// In the codec's RTP clock (90 kHz video, 48 kHz Opus), from the caller's pts, before
    /// any stream's random offset.
    public let timestamp: Int64
    /// A viewer can start decoding here (H.264: the access unit has an IDR slice; Opus: always).
    public let isKeyframe: Bool
    /// The last packet carries the RTP marker bit (H.264: the end of the access unit; Opus:
    /// the first packet of a talkspurt).
    public let marker: Bool
    /// Every payload, end to end.
    public private(set) var bytes: [UInt8]
    /// Where each payload ends in `bytes`.
    private var ends: [Int]

    init(codec: WebRTCCodec, timestamp: Int64, isKeyframe: Bool, marker: Bool, byteCapacity: Int, packetCapacity: Int) {
        self.codec = codec
        self.timestamp = timestamp
        self.isKeyframe = isKeyframe
        self.marker = marker
        bytes = []
        bytes.reserveCapacity(byteCapacity)
        ends = []
        ends.reserveCapacity(packetCapacity)
    }

    public var mediaType: MediaType { codec.compressed.mediaType }

    public var packetCount: Int { ends.count }

    /// Payload bytes of all packets (what SR octet counts add up).
    public var payloadByteCount: Int { bytes.count }

    /// The payload of packet `index` (0..<packetCount), without copying.
    public func payload(at index: Int) -> ArraySlice<UInt8> {
        bytes[(index == 0 ? 0 : ends[index - 1])..<ends[index]]
    }

    /// Whether packet `index` carries the marker bit.
    public func marker(at index: Int) -> Bool { marker && index == ends.count - 1 }

    /// Every payload, in order (for tests and logs; sending uses `payload(at:)`).
    public var payloads: [ArraySlice<UInt8>] { (0..<packetCount).map(payload(at:)) }

    // MARK: Building (packetizers)

    mutating func append(_ byte: UInt8) { bytes.append(byte) }

    mutating func append(contentsOf slice: ArraySlice<UInt8>) { bytes.append(contentsOf: slice) }

    mutating func appendBigEndian(_ value: UInt16) { bytes.appendBigEndian(value) }

    /// Ends the payload being written.
    mutating func closePayload() { ends.append(bytes.count) }

    /// Bytes of the payload being written so far.
    var openPayloadCount: Int { bytes.count - (ends.last ?? 0) }
}

/// Why an access unit or a codec configuration cannot be packetized.
public enum PacketizerError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The access unit holds no NAL unit (no start code, or nothing but delimiters and filler).
    case noNALUnits
    /// A length prefix at `offset` runs past the end of the access unit.
    case truncatedLengthPrefix(offset: Int)
    /// AVCC length fields are 1, 2 or 4 bytes.
    case invalidLengthSize(Int)
    /// Extradata that is neither Annex B nor an avcC record, or an avcC record cut short.
    case malformedExtradata
    /// An empty Opus packet.
    case emptyPayload

    public var description: String {
        switch self {
        case .noNALUnits: "access unit without NAL units"
        case .truncatedLengthPrefix(let offset): "NAL unit length at byte \(offset) runs past the access unit"
        case .invalidLengthSize(let size): "NAL length size \(size) (expected 1, 2 or 4)"
        case .malformedExtradata: "H.264 extradata is neither Annex B nor a whole avcC record"
        case .emptyPayload: "empty Opus packet"
        }
    }
}
