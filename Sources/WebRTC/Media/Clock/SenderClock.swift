// RTP timestamp → the sender's wall clock, per SSRC. Each stream of a publisher has its own
// RTP clock with a random origin; an RTCP SR pairs one RTP timestamp with the sender's NTP
// time, and since all streams of a sender share that NTP clock, mapping through it puts
// audio and video on one timeline. Before the first SR, a provisional mapping anchors the
// first packet's timestamp on its arrival time (the receiver's clock), so media can flow
// before the first SR; when the real mapping replaces it, the owner is told by how much it moved.
//
// An SR is only as good as its sender's idea of when an RTP timestamp was sampled. libwebrtc
// (Chrome, Edge, Safari, Firefox) pairs an audio frame's timestamp with the moment the frame
// was encoded, a frame (10–20 ms) and more after its first sample was captured, so through
// SRs alone its audio lands that much late against its video. The abs-capture-time header
// extension carries the true capture time of a packet's first sample on the same NTP clock;
// a stream that sends it is mapped through it, and its SRs are then ignored. Capture times
// are followed as they come, not smoothed: they are stamped when the sample was captured, not
// when a report happened to be sent, and libwebrtc sends one whenever the capture clock moves
// away from the RTP clock by over a millisecond (a microphone that skipped a buffer).

public struct SenderClockMapping: Sendable, Equatable {
    public enum Source: Sendable, Equatable {
        /// Anchored on a packet's arrival: the receiver's clock, not the sender's.
        case arrival
        /// From an RTCP sender report: the sender's NTP clock (µs since the Unix epoch).
        case senderReport
        /// From the abs-capture-time header extension: when the sample was captured, on the
        /// sender's NTP clock.
        case captureTime

        /// On the sender's clock (not the receiver's).
        public var isSenderClock: Bool { self != .arrival }
    }

    /// Unwrapped RTP timestamp of the anchor.
    public var anchorTimestamp: Int64
    /// Its wall-clock time, µs.
    public var anchorWallClock: Int64
    public var source: Source

    public init(anchorTimestamp: Int64, anchorWallClock: Int64, source: Source) {
        self.anchorTimestamp = anchorTimestamp
        self.anchorWallClock = anchorWallClock
        self.source = source
    }

    /// The wall-clock µs of `timestamp`. Timestamps come from the network: a result beyond
    /// Int64 saturates instead of trapping (SenderClock re-anchors long before that).
    public func wallClock(forTimestamp timestamp: Int64, clockRate: Int) -> Int64 {
        let (difference, subtractOverflow) = timestamp.subtractingReportingOverflow(anchorTimestamp)
        let (scaled, multiplyOverflow) = difference.multipliedReportingOverflow(by: 1_000_000)
        let negative = subtractOverflow ? timestamp < anchorTimestamp : difference < 0
        guard !subtractOverflow, !multiplyOverflow else { return negative ? .min : .max }
        let (result, addOverflow) = anchorWallClock.addingReportingOverflow(scaled / Int64(max(clockRate, 1)))
        return addOverflow ? (negative ? .min : .max) : result
    }
}

/// A change of mapping the owner should know about.
public struct SenderClockChange: Sendable, Equatable {
    public var mapping: SenderClockMapping
    /// How far the wall-clock time of the same RTP timestamp moved, µs (0 for the first mapping).
    public var shift: Int64
    /// The mapping went from arrival-based to the sender's clock (an SR or a capture time).
    public var becameSenderBased: Bool
    /// Where the mapping came from before.
    public var previousSource: SenderClockMapping.Source
}

public struct SenderClock: Sendable, Equatable {
    public let clockRate: Int
    /// A later SR further than this (µs) from the mapping means the sender's clock stepped:
    /// it is taken at once and reported. Nearer ones are drift plus the jitter of when the
    /// sender stamped its report (a browser's or aiortc's SR times wobble by milliseconds).
    public let resyncThreshold: Int64
    public private(set) var mapping: SenderClockMapping?
    public private(set) var senderReportsUsed: Int = 0
    public private(set) var captureTimesUsed: Int = 0
    /// The mapping follows 1/`smoothing` of each later SR's error: drift is tracked (it lags by
    /// about `smoothing` reports' worth of it) while report jitter is divided by `smoothing`.
    /// The first reports of a source are averaged instead (the n-th weighs 1/n), so the error
    /// of the first one, which a sender starting up often stamps late, is gone in a few reports
    /// rather than decaying over `smoothing` of them. Capture times are not smoothed.
    static let smoothing: Int64 = 8
    /// Reports of the mapping's source since it was adopted (the adopting one included).
    private var reportsOfSource: Int64 = 0
    /// Packets whose timestamps were more than an hour of media from the mapping's anchor.
    public private(set) var discontinuities = 0

    private func isFar(_ timestamp: Int64, from anchor: Int64) -> Bool {
        let (difference, overflow) = timestamp.subtractingReportingOverflow(anchor)
        let limit = Int64(clockRate) * 3_600
        return overflow || difference > limit || difference < -limit
    }

    public init(clockRate: Int, resyncThreshold: Int64 = 100_000) {
        precondition(clockRate > 0, "clock rate must be positive")
        self.clockRate = clockRate
        self.resyncThreshold = resyncThreshold
    }

    /// A media packet with unwrapped `timestamp` arrived at `now` (µs). The first one
    /// anchors a provisional mapping, if no SR came before. Until one does, the mapping follows
    /// the least-delayed packet: a sender's first packets often wait in its queue until the
    /// connection is up and come in a burst, and anchoring on the first of them would put the
    /// whole stream that late (a browser's audio up to 200 ms) until its first report.
    public mutating func packetArrived(timestamp: Int64, now: Int64) -> SenderClockChange? {
        guard let current = mapping else {
            let first = SenderClockMapping(anchorTimestamp: timestamp, anchorWallClock: now, source: .arrival)
            mapping = first
            return SenderClockChange(mapping: first, shift: 0, becameSenderBased: false, previousSource: .arrival)
        }
        // More than an hour of media from the anchor, either way: not time passing but a
        // sender that restarted its timestamps (or a hostile one alternating them by 2^31).
        // Re-anchor on this packet's arrival rather than map it hours away.
        if isFar(timestamp, from: current.anchorTimestamp) {
            discontinuities += 1
            let anchored = SenderClockMapping(anchorTimestamp: timestamp, anchorWallClock: now, source: .arrival)
            mapping = anchored
            reportsOfSource = 0
            return SenderClockChange(mapping: anchored, shift: 0, becameSenderBased: false, previousSource: current.source)
        }
        let predicted = current.wallClock(forTimestamp: timestamp, clockRate: clockRate)
        if current.source == .arrival, now < predicted {
            mapping = SenderClockMapping(anchorTimestamp: timestamp, anchorWallClock: now, source: .arrival)
        }
        return nil
    }

    /// An SR for this SSRC; `rtpTimestamp` unwrapped by the same unwrapper as the packets
    /// (`TimestampUnwrapper.peek`). Ignored before the first packet, whose timestamp the
    /// unwrapping needs as reference, and once the stream sends capture times. The first SR
    /// replaces the provisional mapping; later ones nudge it (or replace it, past `resyncThreshold`).
    public mutating func senderReport(ntpTime: UInt64, rtpTimestamp: Int64) -> SenderClockChange? {
        guard let old = mapping, old.source != .captureTime, !isFar(rtpTimestamp, from: old.anchorTimestamp) else { return nil }
        senderReportsUsed += 1
        return adopt(NTPTime.unixMicroseconds(fromNTP: ntpTime), forTimestamp: rtpTimestamp, from: .senderReport, old: old)
    }

    /// A packet's abs-capture-time: its first sample was captured at `ntpTime` on the sender's
    /// clock (the extension's capture timestamp plus its estimated clock offset, if any);
    /// `rtpTimestamp` unwrapped as the packets are. The first replaces any other mapping; each
    /// later one is followed as it is (a step past `resyncThreshold` is reported).
    public mutating func captureTime(ntpTime: UInt64, rtpTimestamp: Int64) -> SenderClockChange? {
        guard let old = mapping, !isFar(rtpTimestamp, from: old.anchorTimestamp) else { return nil }
        captureTimesUsed += 1
        return adopt(NTPTime.unixMicroseconds(fromNTP: ntpTime), forTimestamp: rtpTimestamp, from: .captureTime, old: old)
    }

    private mutating func adopt(_ measured: Int64, forTimestamp rtpTimestamp: Int64, from source: SenderClockMapping.Source,
                                old: SenderClockMapping) -> SenderClockChange? {
        let predicted = old.wallClock(forTimestamp: rtpTimestamp, clockRate: clockRate)
        let error = measured - predicted
        if old.source != source || abs(error) >= resyncThreshold {
            let new = SenderClockMapping(anchorTimestamp: rtpTimestamp, anchorWallClock: measured, source: source)
            mapping = new
            reportsOfSource = 1
            return SenderClockChange(mapping: new, shift: error, becameSenderBased: !old.source.isSenderClock,
                                     previousSource: old.source)
        }
        reportsOfSource += 1
        let weight = source == .captureTime ? 1 : min(reportsOfSource, Self.smoothing)
        mapping = SenderClockMapping(anchorTimestamp: rtpTimestamp, anchorWallClock: predicted + error / weight, source: source)
        return nil
    }

    /// Wall-clock µs of an unwrapped RTP timestamp; nil before any mapping.
    public func wallClock(forTimestamp timestamp: Int64) -> Int64? {
        mapping?.wallClock(forTimestamp: timestamp, clockRate: clockRate)
    }
}
