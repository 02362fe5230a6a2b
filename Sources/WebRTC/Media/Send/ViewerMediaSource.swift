// What a viewer's transport sends: RTP and RTCP to protect and put on the wire, drawn from
// a source the composition fills (`WHEPViewerOutlet`), and the viewer's RTCP given back to
// it. The transport knows nothing of compositions; the source nothing of sockets.

/// A datagram to protect (SRTP or SRTCP) and send.
public struct WHEPDatagram: Sendable, Equatable {
    public var bytes: [UInt8]
    public var isRTCP: Bool

    public init(bytes: [UInt8], isRTCP: Bool) {
        self.bytes = bytes
        self.isRTCP = isRTCP
    }
}

public protocol ViewerMediaSource: AnyObject, Sendable {
    /// What is due at `now`, appended to `out` (unprotected); at most `limit` RTP packets.
    func due(now: Int64, limit: Int, into out: inout [WHEPDatagram])
    /// The viewer's RTCP (decrypted): answers (retransmissions) into `out`; true when it asks
    /// for a keyframe.
    func feedback(_ compound: [UInt8], now: Int64, into out: inout [WHEPDatagram]) -> Bool
    /// When to ask `due` again; nil when nothing waits.
    func nextDeadline(now: Int64) -> Int64?
    /// The source will send nothing more (the composition ended, the viewer said BYE).
    var isEnded: Bool { get }
}
