// One outgoing RTP stream (one SSRC) to one viewer: sequence numbers from a random start,
// timestamps with a random offset (RFC 3550 §5.1), the header written before a shared payload
// into the caller's buffer, and a send history that answers generic NACKs (RFC 4585) with the
// packet again, or wrapped in RTX (RFC 4588) when that was negotiated. Each packet is resent at
// most once per round trip: a receiver that asks again sooner has not yet seen the answer. The
// round trip is measured from the viewer's receiver reports (LSR/DLSR, RFC 3550 §6.4.1).
//
// The history is a ring indexed by sequence number: fixed size, one slot per packet, each
// holding the shared frame, not a copy. Writing a packet appends to a buffer the caller keeps,
// so a stream allocates nothing per packet once that buffer has grown.

import MediaCore

/// Pins a stream's media timestamps to the caller's clock: the media timestamp `timestamp`
/// (codec clock units, before the stream's random offset) was the instant `time` (µs).
/// Audio and video anchored on one clock get sender reports that put them in sync.
public struct RTPClockAnchor: Sendable, Equatable {
    public var timestamp: Int64
    public var time: Int64

    public init(timestamp: Int64, time: Int64) {
        self.timestamp = timestamp
        self.time = time
    }

    /// The media timestamp at `now`, rounded to the nearest tick.
    public func timestamp(at now: Int64, clockRate: Int) -> Int64 {
        timestamp &+ MediaTime.microseconds.rescale(now &- time, to: Rational(1, Int64(max(1, clockRate))))
    }
}

/// RTX as negotiated (`a=rtpmap:97 rtx/90000`, `a=fmtp:97 apt=96`, `a=ssrc-group:FID`).
public struct RTXSendConfiguration: Sendable, Equatable {
    public var ssrc: UInt32
    public var payloadType: UInt8

    public init(ssrc: UInt32, payloadType: UInt8) {
        self.ssrc = ssrc
        self.payloadType = payloadType
    }
}

public struct RTPSendStreamConfiguration: Sendable, Equatable {
    public var ssrc: UInt32
    public var payloadType: UInt8
    /// 90 000 for video, 48 000 for Opus.
    public var clockRate: Int
    /// Retransmissions go on the RTX stream when set; otherwise the packet is sent again as it was.
    public var rtx: RTXSendConfiguration?
    /// The negotiated id of abs-send-time (http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time), if any.
    public var absSendTimeID: UInt8?
    /// Elements written unchanged on every packet (sdes:mid, say).
    public var fixedExtensions: [RTPHeaderExtensionElement]
    /// Packets remembered for NACKs; rounded up to a power of two, at most 32 768.
    public var historyCapacity: Int
    /// A packet sent longer ago than this (µs) is not resent: the viewer's jitter buffer has
    /// moved past it (a receiver gives up after about a second).
    public var historyMaxAge: Int64
    /// At most this many packets resent for one NACK.
    public var maxRetransmissionsPerNack: Int
    /// Floor of the spacing between two retransmissions of one packet (µs); the round trip
    /// measured from receiver reports is used when longer.
    public var minRetransmissionInterval: Int64
    /// The round trip assumed until a receiver report gives one (µs).
    public var initialRTT: Int64

    public init(ssrc: UInt32, payloadType: UInt8, clockRate: Int, rtx: RTXSendConfiguration? = nil,
                absSendTimeID: UInt8? = nil, fixedExtensions: [RTPHeaderExtensionElement] = [],
                historyCapacity: Int = 512, historyMaxAge: Int64 = 1_000_000, maxRetransmissionsPerNack: Int = 256,
                minRetransmissionInterval: Int64 = 10_000, initialRTT: Int64 = 50_000) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.clockRate = clockRate
        self.rtx = rtx
        self.absSendTimeID = absSendTimeID
        self.fixedExtensions = fixedExtensions
        self.historyCapacity = historyCapacity
        self.historyMaxAge = historyMaxAge
        self.maxRetransmissionsPerNack = maxRetransmissionsPerNack
        self.minRetransmissionInterval = minRetransmissionInterval
        self.initialRTT = initialRTT
    }
}

public struct RTPSendStream: Sendable {
    public let configuration: RTPSendStreamConfiguration
    /// Added to every frame's timestamp (random by default).
    public let timestampOffset: UInt32
    /// The sequence number the next packet gets.
    public private(set) var nextSequenceNumber: UInt16
    public private(set) var nextRTXSequenceNumber: UInt16

    /// Packets on this SSRC (retransmissions without RTX included), as SRs count them.
    public private(set) var packetsSent: Int64 = 0
    /// Their payload bytes (RFC 3550: headers and padding excluded).
    public private(set) var payloadBytesSent: Int64 = 0
    /// Packets resent for NACKs (on this SSRC or RTX).
    public private(set) var retransmissionsSent: Int64 = 0
    public private(set) var rtxPacketsSent: Int64 = 0
    public private(set) var rtxPayloadBytesSent: Int64 = 0
    public private(set) var nacksReceived: Int64 = 0
    /// Sequence numbers asked for by NACKs.
    public private(set) var sequenceNumbersNacked: Int64 = 0
    /// Asked for but not in the history (never sent, overwritten, or older than `historyMaxAge`).
    public private(set) var nackedUnavailable: Int64 = 0
    /// Asked for again within a round trip of the last retransmission: not resent.
    public private(set) var retransmissionsSuppressed: Int64 = 0
    /// Asked for beyond `maxRetransmissionsPerNack`: not resent.
    public private(set) var retransmissionsOverLimit: Int64 = 0
    public private(set) var receiverReportsReceived: Int64 = 0
    /// The viewer's last report block about this SSRC (loss, jitter, highest sequence).
    public private(set) var lastReceiverReport: RTCPReportBlock?
    /// The last round trip measured from a receiver report (µs).
    public private(set) var roundTripTime: Int64?
    /// The anchor given, or taken from the first packet sent (its timestamp at the time it went).
    public private(set) var clockAnchor: RTPClockAnchor?

    private struct Sent: Sendable {
        var frame: PacketizedFrame?
        var index = 0
        var sequenceNumber: UInt16 = 0
        var sentAt: Int64 = 0
        var resentAt: Int64?
    }

    private var history: [Sent]
    private let historyMask: Int
    /// Profile, length and elements of the header extension block, written on every packet.
    private let extensionBlock: [UInt8]
    /// Where abs-send-time's 3 bytes are within `extensionBlock`.
    private let absSendTimeOffset: Int?
    private var anchorGiven = false

    /// A stream starting at the given numbers (tests, or numbers chosen elsewhere).
    public init(configuration: RTPSendStreamConfiguration, initialSequenceNumber: UInt16, timestampOffset: UInt32,
                initialRTXSequenceNumber: UInt16 = 0) throws(RTPError) {
        self.configuration = configuration
        self.timestampOffset = timestampOffset
        nextSequenceNumber = initialSequenceNumber
        nextRTXSequenceNumber = initialRTXSequenceNumber
        var capacity = 1
        while capacity < min(max(1, configuration.historyCapacity), 32768) { capacity <<= 1 }
        history = Array(repeating: Sent(), count: capacity)
        historyMask = capacity - 1

        var elements = configuration.fixedExtensions
        if let id = configuration.absSendTimeID { elements.insert(RTPHeaderExtensionElement(id: id, data: [0, 0, 0]), at: 0) }
        if elements.isEmpty {
            extensionBlock = []
            absSendTimeOffset = nil
        } else {
            let block = RTPHeaderExtension.fitting(elements)
            let (profile, data) = try block.serialized()
            var bytes: [UInt8] = []
            bytes.appendBigEndian(profile)
            bytes.appendBigEndian(UInt16(data.count / 4))
            bytes += data
            extensionBlock = bytes
            // abs-send-time is the first element: after its 1-byte (or 2-byte) element header.
            if configuration.absSendTimeID != nil, case .oneByte = block { absSendTimeOffset = 5 }
            else if configuration.absSendTimeID != nil { absSendTimeOffset = 6 }
            else { absSendTimeOffset = nil }
        }
    }

    /// A stream with a random first sequence number and timestamp offset (RFC 3550 §5.1).
    public init<G: RandomNumberGenerator>(configuration: RTPSendStreamConfiguration, using generator: inout G) throws(RTPError) {
        try self.init(configuration: configuration, initialSequenceNumber: UInt16.random(in: 0...UInt16.max, using: &generator),
                      timestampOffset: UInt32.random(in: 0...UInt32.max, using: &generator),
                      initialRTXSequenceNumber: UInt16.random(in: 0...UInt16.max, using: &generator))
    }

    /// Bytes of the RTP header this stream writes (fixed header and extension block).
    public var headerSize: Int { 12 + extensionBlock.count }

    /// The RTP timestamp of a frame timestamp on this stream.
    public func rtpTimestamp(_ timestamp: Int64) -> UInt32 {
        UInt32(truncatingIfNeeded: timestamp &+ Int64(timestampOffset))
    }

    /// Ties the media clock to the caller's clock for sender reports (see `RTPClockAnchor`);
    /// without it, the first packet's timestamp is tied to the time it was sent.
    public mutating func setClockAnchor(_ anchor: RTPClockAnchor) {
        clockAnchor = anchor
        anchorGiven = true
    }

    // MARK: Sending

    /// Replaces `datagram` with packet `index` of `frame` on the next sequence number, and
    /// keeps it for NACKs. Returns the sequence number.
    @discardableResult
    public mutating func writePacket(_ frame: PacketizedFrame, index: Int, now: Int64, into datagram: inout [UInt8]) -> UInt16 {
        precondition(index >= 0 && index < frame.packetCount, "no packet \(index) in a frame of \(frame.packetCount)")
        let sequenceNumber = nextSequenceNumber
        nextSequenceNumber &+= 1
        let payload = frame.payload(at: index)
        writeHeader(marker: frame.marker(at: index), payloadType: configuration.payloadType, sequenceNumber: sequenceNumber,
                    timestamp: rtpTimestamp(frame.timestamp), ssrc: configuration.ssrc, now: now, into: &datagram)
        datagram.append(contentsOf: payload)
        history[Int(sequenceNumber) & historyMask] = Sent(frame: frame, index: index, sequenceNumber: sequenceNumber, sentAt: now)
        packetsSent += 1
        payloadBytesSent += Int64(payload.count)
        if !anchorGiven, clockAnchor == nil { clockAnchor = RTPClockAnchor(timestamp: frame.timestamp, time: now) }
        return sequenceNumber
    }

    /// The sequence numbers to resend for `nack` at `now`, in the order asked, each marked as
    /// resent now; write each with `writeRetransmission`. A NACK about another SSRC gives none.
    public mutating func retransmissions(answering nack: RTCPGenericNack, now: Int64) -> [UInt16] {
        guard nack.mediaSSRC == configuration.ssrc else { return [] }
        nacksReceived += 1
        let spacing = max(1, configuration.minRetransmissionInterval, roundTripTime ?? configuration.initialRTT)
        var resend: [UInt16] = []
        for pair in nack.pairs {
            for bit in -1..<16 where bit < 0 || pair.lostBitmask & (1 << bit) != 0 {
                let sequenceNumber = pair.packetID &+ UInt16(bit + 1)
                sequenceNumbersNacked += 1
                let slot = Int(sequenceNumber) & historyMask
                guard history[slot].frame != nil, history[slot].sequenceNumber == sequenceNumber,
                      now - history[slot].sentAt <= configuration.historyMaxAge
                else {
                    nackedUnavailable += 1
                    continue
                }
                if let resentAt = history[slot].resentAt, now - resentAt < spacing {
                    retransmissionsSuppressed += 1
                    continue
                }
                guard resend.count < configuration.maxRetransmissionsPerNack else {
                    retransmissionsOverLimit += 1
                    continue
                }
                history[slot].resentAt = now
                resend.append(sequenceNumber)
            }
        }
        return resend
    }

    /// Replaces `datagram` with the retransmission of `sequenceNumber` (RTX-wrapped when RTX
    /// is configured). False when the history no longer holds it.
    @discardableResult
    public mutating func writeRetransmission(of sequenceNumber: UInt16, now: Int64, into datagram: inout [UInt8]) -> Bool {
        let entry = history[Int(sequenceNumber) & historyMask]
        guard let frame = entry.frame, entry.sequenceNumber == sequenceNumber else { return false }
        let payload = frame.payload(at: entry.index)
        let marker = frame.marker(at: entry.index)
        let timestamp = rtpTimestamp(frame.timestamp)
        if let rtx = configuration.rtx {
            writeHeader(marker: marker, payloadType: rtx.payloadType, sequenceNumber: nextRTXSequenceNumber,
                        timestamp: timestamp, ssrc: rtx.ssrc, now: now, into: &datagram)
            nextRTXSequenceNumber &+= 1
            datagram.appendBigEndian(sequenceNumber)
            datagram.append(contentsOf: payload)
            rtxPacketsSent += 1
            rtxPayloadBytesSent += Int64(payload.count + 2)
        } else {
            writeHeader(marker: marker, payloadType: configuration.payloadType, sequenceNumber: sequenceNumber,
                        timestamp: timestamp, ssrc: configuration.ssrc, now: now, into: &datagram)
            datagram.append(contentsOf: payload)
            packetsSent += 1
            payloadBytesSent += Int64(payload.count)
        }
        retransmissionsSent += 1
        return true
    }

    private func writeHeader(marker: Bool, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32,
                             now: Int64, into datagram: inout [UInt8]) {
        datagram.removeAll(keepingCapacity: true)
        datagram.append(extensionBlock.isEmpty ? 0x80 : 0x90)
        datagram.append((marker ? 0x80 : 0) | payloadType & 0x7F)
        datagram.appendBigEndian(sequenceNumber)
        datagram.appendBigEndian(timestamp)
        datagram.appendBigEndian(ssrc)
        guard !extensionBlock.isEmpty else { return }
        let start = datagram.count
        datagram.append(contentsOf: extensionBlock)
        if let offset = absSendTimeOffset {
            // 6.18 fixed-point seconds: the NTP time's low 6 integer bits and top 18 fraction bits.
            let value = UInt32(truncatingIfNeeded: NTPTime.ntp(fromUnixMicroseconds: now) >> 14)
            datagram[start + offset] = UInt8(truncatingIfNeeded: value >> 16)
            datagram[start + offset + 1] = UInt8(truncatingIfNeeded: value >> 8)
            datagram[start + offset + 2] = UInt8(truncatingIfNeeded: value)
        }
    }

    // MARK: Reports

    /// A report block from the viewer (RR, or an SR's blocks) at `now`; blocks about other
    /// SSRCs are ignored. Measures the round trip when it echoes one of our SRs.
    public mutating func receiverReport(_ block: RTCPReportBlock, now: Int64) {
        guard block.ssrc == configuration.ssrc else { return }
        receiverReportsReceived += 1
        lastReceiverReport = block
        guard block.lastSenderReport != 0 else { return }
        // All three in 1/65536 s on the compact NTP clock; the difference wraps like them.
        let arrival = NTPTime.compact(NTPTime.ntp(fromUnixMicroseconds: now))
        let roundTrip = Int32(bitPattern: arrival &- block.lastSenderReport &- block.delaySinceLastSenderReport)
        // Negative: clocks stepped or a forged echo. Over a minute: not a live viewer's.
        guard roundTrip >= 0, roundTrip <= 60 << 16 else { return }
        // At most 60 << 16 (checked above): the product stays far below Int64's range.
        roundTripTime = (Int64(roundTrip) * 1_000_000) >> 16
    }

    /// The SR for `now` (µs on the caller's clock, as NTP time); nil before the first packet.
    public func makeSenderReport(now: Int64) -> RTCPSenderReport? {
        guard packetsSent > 0, let clockAnchor else { return nil }
        return RTCPSenderReport(ssrc: configuration.ssrc, ntpTime: NTPTime.ntp(fromUnixMicroseconds: now),
                                rtpTimestamp: rtpTimestamp(clockAnchor.timestamp(at: now, clockRate: configuration.clockRate)),
                                packetCount: UInt32(truncatingIfNeeded: packetsSent),
                                octetCount: UInt32(truncatingIfNeeded: payloadBytesSent))
    }
}
