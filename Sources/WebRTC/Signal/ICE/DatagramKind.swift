/// Which protocol a datagram on the shared WebRTC port belongs to, from its first byte
/// (RFC 7983 §7): STUN, DTLS and SRTP/SRTCP share one 5-tuple and are told apart this way.
public enum DatagramKind: Equatable, Sendable {
    /// 0–3: STUN (the two top bits of every STUN message are zero).
    case stun
    /// 20–63: a DTLS record (content types 20–63).
    case dtls
    /// 128–191: RTP or RTCP (version 2); see `isRTCP(_:)` to tell them apart.
    case rtpOrRTCP
    /// Anything else (ZRTP, TURN channels, garbage); drop it.
    case drop

    public init(firstByte: UInt8) {
        switch firstByte {
        case 0...3: self = .stun
        case 20...63: self = .dtls
        case 128...191: self = .rtpOrRTCP
        default: self = .drop
        }
    }

    public init(classifying datagram: [UInt8]) {
        self = datagram.first.map(DatagramKind.init(firstByte:)) ?? .drop
    }

    /// RTCP packet types 192–223 sit where RTP has the marker bit and payload type, and RTP
    /// payload types 64–95 are never used, so the second byte decides (RFC 5761 §4).
    public static func isRTCP(_ datagram: [UInt8]) -> Bool {
        datagram.count >= 2 && (192...223).contains(datagram[1])
    }
}
