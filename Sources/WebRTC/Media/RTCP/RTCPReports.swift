// RFC 3550 §6.4: sender and receiver reports and their report blocks.

import MediaCore

/// Reception statistics about one source (24 bytes on the wire).
public struct RTCPReportBlock: Sendable, Equatable {
    public var ssrc: UInt32
    /// Lost fraction since the previous report, in 1/256.
    public var fractionLost: UInt8
    /// Cumulative packets lost; 24-bit signed on the wire (duplicates can make it negative).
    public var cumulativeLost: Int32
    /// Cycles in the high 16 bits, highest sequence number in the low 16.
    public var extendedHighestSequence: UInt32
    /// Interarrival jitter in timestamp units.
    public var jitter: UInt32
    /// Middle 32 bits of the NTP time of the last SR from `ssrc`; 0 if none.
    public var lastSenderReport: UInt32
    /// Since that SR arrived, in 1/65536 s; 0 if none.
    public var delaySinceLastSenderReport: UInt32

    public static let cumulativeLostRange: ClosedRange<Int32> = -0x80_0000...0x7F_FFFF

    public init(ssrc: UInt32, fractionLost: UInt8 = 0, cumulativeLost: Int32 = 0, extendedHighestSequence: UInt32 = 0,
                jitter: UInt32 = 0, lastSenderReport: UInt32 = 0, delaySinceLastSenderReport: UInt32 = 0) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = cumulativeLost
        self.extendedHighestSequence = extendedHighestSequence
        self.jitter = jitter
        self.lastSenderReport = lastSenderReport
        self.delaySinceLastSenderReport = delaySinceLastSenderReport
    }

    static let size = 24

    init?(reading reader: inout ByteReader) {
        guard let ssrc = reader.readUInt32(), let fraction = reader.readUInt8(), let lost = reader.readUInt24(),
              let highest = reader.readUInt32(), let jitter = reader.readUInt32(),
              let lsr = reader.readUInt32(), let dlsr = reader.readUInt32()
        else { return nil }
        // Sign-extend the 24-bit field.
        let cumulative = Int32(bitPattern: lost << 8) >> 8
        self.init(ssrc: ssrc, fractionLost: fraction, cumulativeLost: cumulative, extendedHighestSequence: highest,
                  jitter: jitter, lastSenderReport: lsr, delaySinceLastSenderReport: dlsr)
    }

    func write(to bytes: inout [UInt8]) {
        bytes.appendBigEndian(ssrc)
        bytes.append(fractionLost)
        let clamped = min(max(cumulativeLost, Self.cumulativeLostRange.lowerBound), Self.cumulativeLostRange.upperBound)
        bytes.appendBigEndian24(UInt32(bitPattern: clamped) & 0xFF_FFFF)
        bytes.appendBigEndian(extendedHighestSequence)
        bytes.appendBigEndian(jitter)
        bytes.appendBigEndian(lastSenderReport)
        bytes.appendBigEndian(delaySinceLastSenderReport)
    }
}

/// SR (PT 200): what a sender sent, and the NTP ↔ RTP timestamp pair that puts its streams on one clock.
public struct RTCPSenderReport: Sendable, Equatable {
    public var ssrc: UInt32
    /// 64-bit NTP timestamp: seconds since 1900 in the high 32 bits, fraction in the low 32.
    public var ntpTime: UInt64
    /// The same instant in the stream's RTP timestamp units.
    public var rtpTimestamp: UInt32
    public var packetCount: UInt32
    public var octetCount: UInt32
    public var reportBlocks: [RTCPReportBlock]

    public init(ssrc: UInt32, ntpTime: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32,
                reportBlocks: [RTCPReportBlock] = []) {
        self.ssrc = ssrc
        self.ntpTime = ntpTime
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
        self.reportBlocks = reportBlocks
    }

    /// The middle 32 bits of `ntpTime`, as echoed in report blocks (LSR).
    public var compactNTP: UInt32 { UInt32(truncatingIfNeeded: ntpTime >> 16) }
}

/// RR (PT 201): reception reports from a receiver (which may send no media; SSRC then is its own).
public struct RTCPReceiverReport: Sendable, Equatable {
    public var ssrc: UInt32
    public var reportBlocks: [RTCPReportBlock]

    public init(ssrc: UInt32, reportBlocks: [RTCPReportBlock] = []) {
        self.ssrc = ssrc
        self.reportBlocks = reportBlocks
    }

    /// Report blocks one RR can carry (the count field has 5 bits).
    public static let maxReportBlocks = 31
}
