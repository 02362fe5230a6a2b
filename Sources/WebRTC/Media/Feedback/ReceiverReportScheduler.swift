// When the regular receiver reports go out, and the datagrams that carry them together with
// whatever feedback is pending. WebRTC endpoints use a fixed interval (about 1 s for video);
// RFC 3550 §6.3.5's randomization (× 0.5...1.5) is applied when a generator is given.

public struct ReceiverReportConfiguration: Sendable, Equatable {
    /// Our SSRC (a receive-only endpoint still has one for RTCP).
    public var senderSSRC: UInt32
    public var cname: String
    /// Between two regular reports, in µs.
    public var interval: Int64
    public var maxCompoundSize: Int
    /// `a=rtcp-rsize` was negotiated: feedback may go without a report.
    public var reducedSize: Bool

    public init(senderSSRC: UInt32, cname: String, interval: Int64 = 1_000_000,
                maxCompoundSize: Int = RTCPCompoundPacker.defaultMaxSize, reducedSize: Bool = false) {
        self.senderSSRC = senderSSRC
        self.cname = cname
        self.interval = interval
        self.maxCompoundSize = maxCompoundSize
        self.reducedSize = reducedSize
    }
}

public struct ReceiverReportScheduler: Sendable, Equatable {
    public let configuration: ReceiverReportConfiguration
    public private(set) var reportsSent: Int = 0

    /// Nil until the first report: the first one is due at once.
    private var nextReportAt: Int64?

    public init(configuration: ReceiverReportConfiguration) {
        self.configuration = configuration
    }

    public func isReportDue(now: Int64) -> Bool {
        guard let nextReportAt else { return true }
        return now >= nextReportAt
    }

    public var nextDeadline: Int64 { nextReportAt ?? Int64.min }

    /// The datagrams to send at `now`: the regular report (when due) for `streams`, and
    /// `feedback` (NACK, PLI/FIR, REMB), which is never held back. Empty when nothing is due.
    public mutating func poll(now: Int64, streams: inout [RTPReceiveStream], feedback: [RTCPPacket]) throws(RTCPError) -> [[UInt8]] {
        let interval = configuration.interval
        return try poll(now: now, streams: &streams, feedback: feedback) { interval }
    }

    /// The same, with the next interval randomized by `generator`.
    public mutating func poll<G: RandomNumberGenerator>(now: Int64, streams: inout [RTPReceiveStream], feedback: [RTCPPacket],
                                                        using generator: inout G) throws(RTCPError) -> [[UInt8]] {
        let interval = configuration.interval
        return try poll(now: now, streams: &streams, feedback: feedback) {
            interval * Int64.random(in: 500...1500, using: &generator) / 1000
        }
    }

    private mutating func poll(now: Int64, streams: inout [RTPReceiveStream], feedback: [RTCPPacket],
                               nextInterval: () -> Int64) throws(RTCPError) -> [[UInt8]] {
        let due = isReportDue(now: now)
        guard due || !feedback.isEmpty else { return [] }
        var blocks: [RTCPReportBlock] = []
        if due {
            for index in streams.indices {
                if let block = streams[index].makeReportBlock(now: now) { blocks.append(block) }
            }
            reportsSent += 1
            nextReportAt = now + nextInterval()
        }
        let compounds = RTCPCompoundPacker.pack(senderSSRC: configuration.senderSSRC, cname: configuration.cname,
                                                reportBlocks: blocks, feedback: feedback,
                                                maxSize: configuration.maxCompoundSize, reducedSize: configuration.reducedSize)
        var datagrams: [[UInt8]] = []
        for compound in compounds { datagrams.append(try RTCPPacket.serializeCompound(compound)) }
        return datagrams
    }
}
