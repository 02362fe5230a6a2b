// One WHEP viewer's transport, the mirror of `WebRTCPublisherSession`: ICE-lite checks, the
// DTLS handshake, then SRTP out (what its `ViewerMediaSource` has due) and SRTCP in (the
// viewer's receiver reports, NACKs and keyframe requests, given back to the source). No
// sockets and no threads: the UDP shell feeds it datagrams and `now` and sends what it
// returns.
//
//   STUN ──► IceLiteAgent ──► Binding responses, the selected path, consent
//   DTLS ──► DTLSEndpoint ──► handshake flights; once up: SRTP keys (fingerprint checked)
//   source.due ──► SRTP protect ──► datagrams to the selected path
//   SRTCP ──► unprotect ──► source.feedback ──► retransmissions (protected), keyframe wanted
//
// Consent (RFC 7675) is the viewer's: its checks and its RTCP. A viewer that stops reading
// stops both, so its consent runs out and the session ends; before that the source holds
// back its media (no feedback) and drops it to keyframes.

public import WebRTCMedia
public import WebRTCSecurity
public import WebRTCSignal

/// What the owner does next, in order.
public enum WebRTCViewerOutput: Sendable, Equatable {
    case send([UInt8], to: TransportAddress)
    /// DTLS is up and SRTP keyed: media flows.
    case connected
    /// The viewer asked for a keyframe (PLI, FIR).
    case keyframeWanted
    /// The session is over; the owner removes it. Reported once.
    case ended(WebRTCSessionEnd)
}

/// Counters of one viewer's transport.
public struct WebRTCViewerStatistics: Sendable, Equatable {
    public var packetsSent: Int64 = 0
    public var bytesSent: Int64 = 0
    public var rtcpReceived: Int64 = 0
    public var srtp: SRTPStatistics = SRTPStatistics()
    public var droppedDatagrams: Int64 = 0
    public var dtlsDatagramsDropped: Int64 = 0
}

/// Not thread-safe: the owner serializes every call (the shell uses its event loop).
public final class WebRTCViewerSession {
    public let negotiation: WHEPNegotiation
    public let localCredentials: IceCredentials
    public let source: any ViewerMediaSource
    private let configuration: WebRTCSessionConfiguration
    private var ice: IceLiteAgent
    private let dtls: DTLSEndpoint
    private var srtpIn: SRTPSession?
    private var srtpOut: SRTPSession?
    private let createdAt: Int64
    private var dtlsStarted = false
    private var ended = false
    private var dtlsBudget: TokenBucket
    /// Reused between calls: the source's datagrams before protection.
    private var pending: [WHEPDatagram] = []
    public private(set) var statistics = WebRTCViewerStatistics()

    public init(negotiation: WHEPNegotiation, localCredentials: IceCredentials, certificate: DTLSCertificate,
                source: any ViewerMediaSource, configuration: WebRTCSessionConfiguration = WebRTCSessionConfiguration(),
                now: Int64) throws(DTLSError) {
        self.negotiation = negotiation
        self.localCredentials = localCredentials
        self.source = source
        self.configuration = configuration
        ice = IceLiteAgent(local: localCredentials, remote: negotiation.remoteCredentials, hmacSHA1: WebRTCPublisherSession.hmacSHA1,
                           configuration: configuration.ice, now: now)
        dtls = try DTLSEndpoint(role: negotiation.isDTLSClient ? .client : .server, certificate: certificate,
                                remoteFingerprint: (algorithm: negotiation.remoteFingerprint.algorithm,
                                                    bytes: negotiation.remoteFingerprint.bytes))
        createdAt = now
        dtlsBudget = TokenBucket(burst: configuration.dtlsBurst, perSecond: configuration.dtlsPerSecond, now: now)
    }

    /// Where media goes; nil before the first valid check.
    public var remoteAddress: TransportAddress? { ice.selectedAddress }

    public var isConnected: Bool { srtpOut != nil }

    /// The next time `poll` has something to do.
    public func nextDeadline(now: Int64) -> Int64? {
        if ended { return nil }
        var deadline = ice.nextDeadline
        func earliest(_ other: Int64?) {
            guard let other else { return }
            deadline = deadline.map { min($0, other) } ?? other
        }
        if !isConnected { earliest(createdAt + configuration.connectTimeout) }
        if let timeout = dtls.nextTimeout { earliest(WebRTCPublisherSession.microseconds(timeout)) }
        if isConnected { earliest(source.nextDeadline(now: now)) }
        return deadline
    }

    // MARK: Input

    /// One datagram from `source` (see `DatagramKind`), its outputs appended to `out`.
    public func receive(_ datagram: [UInt8], from address: TransportAddress, now: Int64, into out: inout [WebRTCViewerOutput]) {
        guard !ended else { return }
        switch DatagramKind(classifying: datagram) {
        case .stun:
            iceActions(ice.receiveStun(datagram, from: address, now: now), now: now, into: &out)
        case .dtls:
            guard ice.selectedAddress == address else {
                statistics.droppedDatagrams += 1
                return
            }
            guard dtlsBudget.take(now: now) else {
                statistics.dtlsDatagramsDropped += 1
                return
            }
            for flight in dtls.receive(datagram, now: WebRTCPublisherSession.instant(now)) { out.append(.send(flight, to: address)) }
            dtlsProgress(into: &out)
        case .rtpOrRTCP:
            receiveRTCP(datagram, from: address, now: now, into: &out)
        case .drop:
            statistics.droppedDatagrams += 1
        }
    }

    /// Timers (ICE consent, DTLS retransmissions, the connect timeout) and the media due now.
    public func poll(now: Int64, into out: inout [WebRTCViewerOutput]) {
        guard !ended else { return }
        // The composition ended (or the viewer said BYE): over, connected or not.
        if source.isEnded {
            end(.mediaEnded, into: &out)
            return
        }
        iceActions(ice.poll(now: now), now: now, into: &out)
        if ended { return }
        if !isConnected, now - createdAt >= configuration.connectTimeout {
            end(.connectTimeout, into: &out)
            return
        }
        if let timeout = dtls.nextTimeout, WebRTCPublisherSession.microseconds(timeout) <= now, let address = ice.selectedAddress {
            for flight in dtls.handleTimeout(now: WebRTCPublisherSession.instant(now)) { out.append(.send(flight, to: address)) }
            dtlsProgress(into: &out)
        }
        guard isConnected, !ended else { return }
        source.due(now: now, limit: 512, into: &pending)
        flush(into: &out)
    }

    // MARK: Steps

    private func flush(into out: inout [WebRTCViewerOutput]) {
        defer { pending.removeAll(keepingCapacity: true) }
        guard let srtpOut, let address = ice.selectedAddress else { return }
        for index in pending.indices {
            let protected = pending[index].isRTCP ? srtpOut.protectRTCP(&pending[index].bytes) : srtpOut.protectRTP(&pending[index].bytes)
            guard protected else { continue }
            statistics.packetsSent += 1
            statistics.bytesSent += Int64(pending[index].bytes.count)
            out.append(.send(pending[index].bytes, to: address))
        }
    }

    private func receiveRTCP(_ datagram: [UInt8], from address: TransportAddress, now: Int64, into out: inout [WebRTCViewerOutput]) {
        // A viewer sends RTCP only; RTP from it (or anything before keys) is dropped.
        guard let srtpIn, ice.selectedAddress == address, DatagramKind.isRTCP(datagram) else {
            statistics.droppedDatagrams += 1
            return
        }
        var packet = datagram
        guard srtpIn.unprotectRTCP(&packet) else {
            statistics.srtp = srtpIn.statistics
            return
        }
        statistics.rtcpReceived += 1
        iceActions(ice.mediaReceived(from: address, now: now), now: now, into: &out)
        if source.feedback(packet, now: now, into: &pending) { out.append(.keyframeWanted) }
        flush(into: &out)
    }

    private func iceActions(_ actions: [IceAction], now: Int64, into out: inout [WebRTCViewerOutput]) {
        for action in actions {
            switch action {
            case .send(let bytes, let address):
                out.append(.send(bytes, to: address))
            case .connected(let address):
                // As DTLS client (the viewer offered setup:passive) we speak first, once we know where it is.
                if !dtlsStarted {
                    dtlsStarted = true
                    for flight in dtls.start(now: WebRTCPublisherSession.instant(now)) { out.append(.send(flight, to: address)) }
                }
            case .disconnected, .checkFailed:
                break
            case .consentExpired:
                end(.consentExpired, into: &out)
            }
        }
    }

    private func dtlsProgress(into out: inout [WebRTCViewerOutput]) {
        switch dtls.state {
        case .handshaking:
            return
        case .connected(let keys):
            guard srtpOut == nil else { return }
            do {
                srtpIn = try SRTPSession(profile: keys.profile, keyAndSalt: keys.remoteKeyAndSalt, direction: .inbound)
                srtpOut = try SRTPSession(profile: keys.profile, keyAndSalt: keys.localKeyAndSalt, direction: .outbound)
            } catch {
                end(.dtlsFailed(error.reason), into: &out)
                return
            }
            out.append(.connected)
        case .failed(let error):
            end(.dtlsFailed(error.reason), into: &out)
        case .closed:
            end(.closedByPeer, into: &out)
        }
    }

    private func end(_ reason: WebRTCSessionEnd, into out: inout [WebRTCViewerOutput]) {
        guard !ended else { return }
        ended = true
        out.append(.ended(reason))
    }
}
