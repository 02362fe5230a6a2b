// RFC 4588 retransmission payloads: an RTX packet carries the original sequence number
// (OSN) in its first two payload bytes, on its own SSRC and payload type. Unwrapping gives
// back the original packet, marked as a retransmission. libwebrtc also sends padding-only
// packets on the RTX SSRC as bandwidth probes; those carry no media.

/// The SDP associations: `a=rtpmap:97 rtx/90000` + `a=fmtp:97 apt=96`, and `a=ssrc-group:FID media rtx`.
public struct RTXAssociations: Sendable, Equatable {
    /// RTX payload type → associated (original) payload type.
    public var payloadTypes: [UInt8: UInt8]
    /// RTX SSRC → media SSRC. An RTX SSRC missing here (not yet signalled) is taken as RTX
    /// for its payload type but cannot be unwrapped.
    public var ssrcs: [UInt32: UInt32]

    public init(payloadTypes: [UInt8: UInt8] = [:], ssrcs: [UInt32: UInt32] = [:]) {
        self.payloadTypes = payloadTypes
        self.ssrcs = ssrcs
    }
}

public enum RTXResult: Sendable, Equatable {
    /// Not an RTX packet: use it as is.
    case media(RTPPacket)
    /// The original packet, recovered from an RTX packet.
    case retransmission(RTPPacket)
    /// Padding only (a bandwidth probe): nothing to deliver.
    case padding
    /// RTX payload type on an SSRC with no known media SSRC.
    case unknownSSRC(UInt32)
}

public struct RTXUnwrapper: Sendable, Equatable {
    public var associations: RTXAssociations

    public init(associations: RTXAssociations) {
        self.associations = associations
    }

    public func unwrap(_ packet: RTPPacket) throws(RTPError) -> RTXResult {
        guard let originalType = associations.payloadTypes[packet.payloadType] else { return .media(packet) }
        if packet.payload.isEmpty { return .padding }
        guard packet.payload.count >= 2 else { throw .truncatedRTXPayload }
        guard let mediaSSRC = associations.ssrcs[packet.ssrc] else { return .unknownSSRC(packet.ssrc) }
        var original = packet
        original.payloadType = originalType
        original.ssrc = mediaSSRC
        original.sequenceNumber = UInt16(packet.payload[0]) << 8 | UInt16(packet.payload[1])
        original.payload = Array(packet.payload.dropFirst(2))
        original.paddingCount = 0
        return .retransmission(original)
    }

    /// The RTX packet for `original` (for tests, and a sender that retransmits).
    public static func wrap(_ original: RTPPacket, rtxSSRC: UInt32, rtxPayloadType: UInt8, rtxSequenceNumber: UInt16) -> RTPPacket {
        var rtx = original
        rtx.ssrc = rtxSSRC
        rtx.payloadType = rtxPayloadType
        rtx.sequenceNumber = rtxSequenceNumber
        rtx.payload = [UInt8(original.sequenceNumber >> 8), UInt8(truncatingIfNeeded: original.sequenceNumber)] + original.payload
        return rtx
    }
}
