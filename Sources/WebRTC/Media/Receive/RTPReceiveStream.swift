// Reception statistics of one incoming SSRC, after RFC 3550 appendix A.3 (expected, lost,
// fraction lost per interval) and A.8 (interarrival jitter), and the report block they
// make. The owner passes arrival times; nothing here reads a clock.

public struct RTPReceiveStream: Sendable {
    public let ssrc: UInt32
    /// RTP timestamp units per second (90 000 for video, 48 000 for Opus).
    public let clockRate: Int

    /// Packets accepted, late and duplicate ones included (RFC 3550 counts them, so
    /// `cumulativeLost` can go negative).
    public private(set) var packetsReceived: Int64 = 0
    public private(set) var payloadBytesReceived: Int64 = 0
    public private(set) var retransmissionsReceived: Int64 = 0
    /// Packets dropped by the sequence validator (unconfirmed jumps, probation).
    public private(set) var packetsRejected: Int64 = 0
    /// Sequence restarts the source made.
    public private(set) var restarts: Int = 0

    private var sequence: SequenceUnwrapper
    private var timestamps = TimestampUnwrapper()
    private var baseExtended: Int64?
    private var expectedPrior: Int64 = 0
    private var receivedPrior: Int64 = 0
    /// Jitter × 16, so the 1/16 gain of A.8 stays in integers.
    private var scaledJitter: Int64 = 0
    private var lastInOrder: (arrival: Int64, timestamp: Int64)?
    private var lastSenderReport: (compactNTP: UInt32, arrival: Int64)?

    public init(ssrc: UInt32, clockRate: Int, sequence: SequenceUnwrapper = SequenceUnwrapper()) {
        precondition(clockRate > 0, "clock rate must be positive")
        self.ssrc = ssrc
        self.clockRate = clockRate
        self.sequence = sequence
    }

    // MARK: Events

    /// Accounts for one packet of this SSRC arriving at `now` (µs). Returns what the
    /// sequence validator made of it, so the caller can key buffers by extended sequence.
    /// Retransmissions fill losses but say nothing about network jitter, so they are
    /// left out of it.
    public mutating func received(sequenceNumber: UInt16, timestamp: UInt32, payloadBytes: Int, now: Int64,
                                  isRetransmission: Bool = false) -> SequenceUpdate {
        let update: SequenceUpdate
        if isRetransmission, let nearest = sequence.nearest(sequenceNumber), nearest <= sequence.highestExtended ?? nearest {
            update = .late(extended: nearest)
        } else {
            update = sequence.unwrap(sequenceNumber)
        }
        switch update {
        case .rejected, .probation:
            packetsRejected += 1
            return update
        case .restarted(let extended):
            restarts += 1
            baseExtended = extended
            expectedPrior = 0
            receivedPrior = 0
            packetsReceived = 0
            lastInOrder = nil
            timestamps = TimestampUnwrapper()
        case .advanced(let extended):
            if baseExtended == nil { baseExtended = extended }
        case .late:
            break
        }
        packetsReceived += 1
        payloadBytesReceived += Int64(payloadBytes)
        if isRetransmission {
            retransmissionsReceived += 1
        } else if case .late = update {
            // Left out of jitter, as libwebrtc does: against the previous packet in arrival
            // order a reordered one would count its reordering as network jitter.
        } else {
            updateJitter(timestamp: timestamps.unwrap(timestamp), now: now)
        }
        return update
    }

    /// Remembers an SR from this source for LSR/DLSR.
    public mutating func senderReportReceived(ntpTime: UInt64, now: Int64) {
        lastSenderReport = (NTPTime.compact(ntpTime), now)
    }

    // MARK: Statistics

    public var extendedHighestSequence: Int64? { sequence.highestExtended }

    /// Packets expected since the first (or the restart): highest − base + 1.
    public var packetsExpected: Int64 {
        guard let baseExtended, let highest = sequence.highestExtended else { return 0 }
        return highest - baseExtended + 1
    }

    public var cumulativeLost: Int64 { packetsExpected - packetsReceived }

    /// Interarrival jitter in timestamp units.
    public var jitter: UInt32 { UInt32(clamping: scaledJitter >> 4) }

    /// The report block for the next RR; starts a new fraction-lost interval. Nil before
    /// the first packet (nothing to report).
    public mutating func makeReportBlock(now: Int64) -> RTCPReportBlock? {
        guard let highest = sequence.highestExtended, baseExtended != nil else { return nil }
        let expected = packetsExpected
        let expectedInterval = expected - expectedPrior
        let receivedInterval = packetsReceived - receivedPrior
        expectedPrior = expected
        receivedPrior = packetsReceived
        let lostInterval = expectedInterval - receivedInterval
        let fraction: UInt8 = expectedInterval == 0 || lostInterval <= 0 ? 0 : UInt8(clamping: (lostInterval << 8) / expectedInterval)

        var lsr: UInt32 = 0, dlsr: UInt32 = 0
        if let lastSenderReport {
            lsr = lastSenderReport.compactNTP
            dlsr = UInt32(clamping: max(0, now - lastSenderReport.arrival) * 65536 / 1_000_000)
        }
        let range = RTCPReportBlock.cumulativeLostRange
        return RTCPReportBlock(ssrc: ssrc, fractionLost: fraction,
                               cumulativeLost: Int32(min(max(cumulativeLost, Int64(range.lowerBound)), Int64(range.upperBound))),
                               extendedHighestSequence: UInt32(truncatingIfNeeded: highest),
                               jitter: jitter, lastSenderReport: lsr, delaySinceLastSenderReport: dlsr)
    }

    // MARK: Jitter (A.8)

    private mutating func updateJitter(timestamp: Int64, now: Int64) {
        defer { lastInOrder = (now, timestamp) }
        guard let last = lastInOrder else { return }
        // D = (Rj − Ri) − (Sj − Si), with the arrival delta converted to timestamp units.
        let arrivalUnits = (now - last.arrival) * Int64(clockRate) / 1_000_000
        let difference = abs(arrivalUnits - (timestamp - last.timestamp))
        // A jump of seconds is a timestamp discontinuity (or a pause), not jitter.
        guard difference <= Int64(clockRate) * 5 else { return }
        scaledJitter += difference - ((scaledJitter + 8) >> 4)
    }
}
