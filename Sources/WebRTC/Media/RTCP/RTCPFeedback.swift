// RFC 4585 transport and payload-specific feedback the receiver sends: generic NACK
// (RTPFB 1), PLI (PSFB 1), FIR (RFC 5104, PSFB 4) and REMB (PSFB 15, draft-alvestrand-rmcat-remb).

/// One generic NACK FCI: `packetID` is lost, and so is `packetID + i + 1` for each set bit i of `lostBitmask`.
public struct RTCPNackPair: Sendable, Equatable, Hashable {
    public var packetID: UInt16
    public var lostBitmask: UInt16

    public init(packetID: UInt16, lostBitmask: UInt16) {
        self.packetID = packetID
        self.lostBitmask = lostBitmask
    }

    /// Every sequence number this pair reports lost, in order (wrapping past 65535).
    public var sequenceNumbers: [UInt16] {
        var result = [packetID]
        for bit in 0..<16 where lostBitmask & (1 << bit) != 0 {
            result.append(packetID &+ UInt16(bit + 1))
        }
        return result
    }
}

/// Generic NACK (RTPFB, FMT 1).
public struct RTCPGenericNack: Sendable, Equatable {
    public var senderSSRC: UInt32
    public var mediaSSRC: UInt32
    public var pairs: [RTCPNackPair]

    public init(senderSSRC: UInt32, mediaSSRC: UInt32, pairs: [RTCPNackPair]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.pairs = pairs
    }

    /// A NACK for `sequenceNumbers`, packed into the fewest pairs.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32, lost sequenceNumbers: [UInt16]) {
        self.init(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, pairs: NackPacker.pack(sequenceNumbers))
    }

    public var sequenceNumbers: [UInt16] { pairs.flatMap(\.sequenceNumbers) }
}

/// Picture Loss Indication (PSFB, FMT 1): "send me a keyframe", no FCI.
public struct RTCPPictureLossIndication: Sendable, Equatable {
    public var senderSSRC: UInt32
    public var mediaSSRC: UInt32

    public init(senderSSRC: UInt32, mediaSSRC: UInt32) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
    }
}

/// Full Intra Request (PSFB, FMT 4). The media SSRC of the common header is 0; the
/// targets are in the FCI entries.
public struct RTCPFullIntraRequest: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var ssrc: UInt32
        /// Incremented for each new request so the sender can tell them from repeats.
        public var sequenceNumber: UInt8

        public init(ssrc: UInt32, sequenceNumber: UInt8) {
            self.ssrc = ssrc
            self.sequenceNumber = sequenceNumber
        }
    }

    public var senderSSRC: UInt32
    public var mediaSSRC: UInt32
    public var entries: [Entry]

    public init(senderSSRC: UInt32, mediaSSRC: UInt32 = 0, entries: [Entry]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.entries = entries
    }
}

/// Receiver Estimated Maximum Bitrate (PSFB, FMT 15, "REMB"): a cap on what the sender
/// sends to us for `ssrcs`, as an 18-bit mantissa times 2^exponent (6 bits).
public struct RTCPReceiverEstimatedMaxBitrate: Sendable, Equatable {
    public var senderSSRC: UInt32
    /// Bits per second, as decoded. Encoding rounds it down to the nearest representable
    /// value, so a cap is never raised by the encoding.
    public var bitrate: UInt64
    public var ssrcs: [UInt32]

    public init(senderSSRC: UInt32, bitrate: UInt64, ssrcs: [UInt32]) {
        self.senderSSRC = senderSSRC
        self.bitrate = bitrate
        self.ssrcs = ssrcs
    }

    static let identifier: [UInt8] = Array("REMB".utf8)
    static let maxMantissa: UInt64 = (1 << 18) - 1

    /// The smallest exponent whose mantissa fits 18 bits; the mantissa is truncated.
    public static func encode(bitrate: UInt64) -> (exponent: UInt8, mantissa: UInt32) {
        var exponent: UInt8 = 0
        while exponent < 63, bitrate >> UInt64(exponent) > maxMantissa { exponent += 1 }
        return (exponent, UInt32(min(bitrate >> UInt64(exponent), maxMantissa)))
    }

    /// The bitrate this packet carries once encoded.
    public var encodedBitrate: UInt64 {
        let (exponent, mantissa) = Self.encode(bitrate: bitrate)
        return UInt64(mantissa) << UInt64(exponent)
    }
}
