// When a stream's sender reports go out: the first as soon as the stream has sent a packet
// (a browser puts audio and video in sync only once it has an SR for each), then every
// `interval`, randomized by RFC 3550 §6.3.5's × 0.5...1.5 when a generator is given. Each
// report is an SR with the NTP ↔ RTP pair and the counts, and an SDES with the CNAME that ties
// the viewer's audio and video streams together (RFC 3550 §6.5.1), in one compound.

public struct SenderReportConfiguration: Sendable, Equatable {
    /// The CNAME of every stream sent to this viewer (the one the SDP answer announces).
    public var cname: String
    /// Between two reports, µs.
    public var interval: Int64

    public init(cname: String, interval: Int64 = 1_000_000) {
        self.cname = cname
        self.interval = interval
    }
}

public struct SenderReportScheduler: Sendable, Equatable {
    public let configuration: SenderReportConfiguration
    public private(set) var reportsSent: Int = 0

    /// Nil until the first report, which goes with the first poll after a packet was sent.
    private var nextReportAt: Int64?

    public init(configuration: SenderReportConfiguration) {
        self.configuration = configuration
    }

    /// When the next report is due; nil before the first (poll after sending packets).
    public var nextDeadline: Int64? { nextReportAt }

    /// The compound (SR + SDES CNAME) due at `now` for `stream`; nil when none is due or the
    /// stream has sent nothing yet.
    public mutating func poll(now: Int64, stream: RTPSendStream) throws(RTCPError) -> [UInt8]? {
        let interval = configuration.interval
        return try poll(now: now, stream: stream) { interval }
    }

    /// The same, with the next interval randomized by `generator`.
    public mutating func poll<G: RandomNumberGenerator>(now: Int64, stream: RTPSendStream,
                                                        using generator: inout G) throws(RTCPError) -> [UInt8]? {
        let interval = configuration.interval
        return try poll(now: now, stream: stream) { interval * Int64.random(in: 500...1500, using: &generator) / 1000 }
    }

    private mutating func poll(now: Int64, stream: RTPSendStream, nextInterval: () -> Int64) throws(RTCPError) -> [UInt8]? {
        if let nextReportAt, now < nextReportAt { return nil }
        guard let report = stream.makeSenderReport(now: now) else { return nil }
        let bytes = try RTCPPacket.serializeCompound([
            .senderReport(report), .sourceDescription(.cname(ssrc: report.ssrc, configuration.cname))])
        reportsSent += 1
        nextReportAt = now + nextInterval()
        return bytes
    }

    /// The last compound of a stream that ends (the viewer left or was dropped): its SR when it
    /// sent anything, the SDES, and a BYE (RFC 3550 §6.6).
    public func goodbye(now: Int64, stream: RTPSendStream, reason: String? = nil) throws(RTCPError) -> [UInt8] {
        let ssrc = stream.configuration.ssrc
        var packets: [RTCPPacket] = []
        // A compound opens with a report: an empty RR when there is no SR to give.
        packets.append(stream.makeSenderReport(now: now).map(RTCPPacket.senderReport) ?? .receiverReport(RTCPReceiverReport(ssrc: ssrc)))
        packets.append(.sourceDescription(.cname(ssrc: ssrc, configuration.cname)))
        packets.append(.goodbye(RTCPGoodbye(ssrcs: [ssrc], reason: reason.map { Array($0.utf8) })))
        return try RTCPPacket.serializeCompound(packets)
    }
}
