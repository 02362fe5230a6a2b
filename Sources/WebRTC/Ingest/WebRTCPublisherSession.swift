// One WHIP publisher's transport, from datagrams to access units: ICE-lite checks, the DTLS
// handshake, SRTP, then the pure media receiver. No sockets and no threads: the UDP shell
// (`WebRTCIngestServer`) feeds it datagrams and `now`, and carries out what it returns.
//
//   STUN ──► IceLiteAgent ──► Binding responses, the selected path, consent
//   DTLS ──► DTLSEndpoint ──► handshake flights; once up: SRTP keys (fingerprint checked)
//   SRTP ──► SRTPSession (inbound) ──► PublisherMediaReceiver ──► access units
//                                              └──► RTCP feedback ──► SRTPSession (outbound)
//
// Datagrams reach a session only from addresses that passed an ICE check (the shell routes by
// ufrag for STUN, then by address), so DTLS and SRTP from anywhere else never get here.

import Crypto
import WebRTCMedia
public import WebRTCPublisher
public import WebRTCSecurity
public import WebRTCSignal

/// What the owner does next, in order.
public enum WebRTCSessionOutput: Sendable, Equatable {
    case send([UInt8], to: TransportAddress)
    /// A media frame, on the publisher's timeline.
    case media(ReceivedAccessUnit)
    /// DTLS is up and SRTP keyed: media can flow.
    case connected
    /// The session is over; the owner removes it. Reported once.
    case ended(WebRTCSessionEnd)
}

/// Why a session ended.
public enum WebRTCSessionEnd: Sendable, Equatable, CustomStringConvertible {
    /// No valid ICE check or media for the consent timeout (RFC 7675).
    case consentExpired
    /// ICE and DTLS did not complete within the connect timeout.
    case connectTimeout
    case dtlsFailed(String)
    /// The peer sent a DTLS close_notify.
    case closedByPeer
    /// A viewer's media ended (its composition stopped).
    case mediaEnded

    public var description: String {
        switch self {
        case .consentExpired: return "consent expired (no ICE check or media for the consent timeout)"
        case .connectTimeout: return "ICE/DTLS did not complete in time"
        case .dtlsFailed(let reason): return "DTLS failed: \(reason)"
        case .closedByPeer: return "the peer closed the connection"
        case .mediaEnded: return "the composition ended"
        }
    }
}

public struct WebRTCSessionConfiguration: Sendable, Equatable {
    public var ice: IceLiteAgent.Configuration
    public var receiver: PublisherMediaReceiverConfiguration
    /// From creation to DTLS connected, µs.
    public var connectTimeout: Int64
    /// SSRCs SRTP keeps state for (libsrtp makes a stream for every SSRC that authenticates):
    /// the offer's audio, video layers and their RTX fit several times over. Packets of further
    /// SSRCs are dropped before decryption, and counted.
    public var maxSRTPStreams: Int
    /// DTLS datagrams a session may make us process: a burst, then so many per second. A
    /// handshake takes a handful; beyond the budget they are dropped and counted, so one
    /// session's handshake flood costs the shared event loop a bounded amount of work.
    public var dtlsBurst: Int
    public var dtlsPerSecond: Int

    public init(ice: IceLiteAgent.Configuration = IceLiteAgent.Configuration(software: "stage-compositor"),
                receiver: PublisherMediaReceiverConfiguration = PublisherMediaReceiverConfiguration(senderSSRC: 1),
                connectTimeout: Int64 = 20_000_000, maxSRTPStreams: Int = 16, dtlsBurst: Int = 24, dtlsPerSecond: Int = 8) {
        self.ice = ice
        self.receiver = receiver
        self.connectTimeout = connectTimeout
        self.maxSRTPStreams = maxSRTPStreams
        self.dtlsBurst = dtlsBurst
        self.dtlsPerSecond = dtlsPerSecond
    }
}

/// Counters of one session: the receiver's, plus what the transport dropped.
public struct WebRTCSessionStatistics: Sendable, Equatable {
    public var receiver: ReceiverStatistics
    public var srtp: SRTPStatistics
    /// RTP/RTCP before SRTP was keyed, STUN that failed its check, and other strays.
    public var droppedDatagrams: Int64
    public var stunRefused: Int64
    /// Packets of SSRCs beyond `maxSRTPStreams`, dropped before decryption.
    public var srtpStreamsRefused: Int64
    /// DTLS datagrams beyond the session's budget, dropped unprocessed.
    public var dtlsDatagramsDropped: Int64
}

/// Not thread-safe: the owner serializes every call (the shell uses its event loop).
public final class WebRTCPublisherSession {
    public let negotiation: SDPNegotiation
    public let localCredentials: IceCredentials
    public let configuration: WebRTCSessionConfiguration
    private var ice: IceLiteAgent
    private let dtls: DTLSEndpoint
    private var srtpIn: SRTPSession?
    private var srtpOut: SRTPSession?
    private var receiver: PublisherMediaReceiver
    private let createdAt: Int64
    private var dtlsStarted = false
    private var ended = false
    private var droppedDatagrams: Int64 = 0
    private var stunRefused: Int64 = 0
    private var srtpSSRCs: Set<UInt32> = []
    private var srtpStreamsRefused: Int64 = 0
    private var dtlsBudget: TokenBucket
    private var dtlsDatagramsDropped: Int64 = 0

    /// `certificate` is the one whose fingerprint the answer carries.
    public init(negotiation: SDPNegotiation, localCredentials: IceCredentials, certificate: DTLSCertificate,
                configuration: WebRTCSessionConfiguration = WebRTCSessionConfiguration(), now: Int64) throws(DTLSError) {
        self.negotiation = negotiation
        self.localCredentials = localCredentials
        self.configuration = configuration
        ice = IceLiteAgent(local: localCredentials, remote: negotiation.remoteCredentials, hmacSHA1: Self.hmacSHA1,
                           configuration: configuration.ice, now: now)
        dtls = try DTLSEndpoint(role: negotiation.isDTLSClient ? .client : .server, certificate: certificate,
                                remoteFingerprint: (algorithm: negotiation.remoteFingerprint.algorithm,
                                                    bytes: negotiation.remoteFingerprint.bytes))
        receiver = PublisherMediaReceiver(negotiation: negotiation, configuration: configuration.receiver)
        createdAt = now
        dtlsBudget = TokenBucket(burst: configuration.dtlsBurst, perSecond: configuration.dtlsPerSecond, now: now)
    }

    /// HMAC-SHA1 for STUN MESSAGE-INTEGRITY.
    public static let hmacSHA1: HMACSHA1 = { key, message in
        Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }

    /// Where RTCP goes now; nil before the first valid check.
    public var remoteAddress: TransportAddress? { ice.selectedAddress }

    public var isConnected: Bool {
        if case .connected = dtls.state { return true }
        return false
    }

    public var statistics: WebRTCSessionStatistics {
        WebRTCSessionStatistics(receiver: receiver.statistics, srtp: srtpIn?.statistics ?? SRTPStatistics(),
                                droppedDatagrams: droppedDatagrams, stunRefused: stunRefused,
                                srtpStreamsRefused: srtpStreamsRefused, dtlsDatagramsDropped: dtlsDatagramsDropped)
    }

    /// The next time `poll` has something to do.
    public var nextDeadline: Int64? {
        if ended { return nil }
        var deadlines = [ice.nextDeadline, receiver.nextDeadline].compactMap { $0 }
        if !isConnected { deadlines.append(createdAt + configuration.connectTimeout) }
        if let timeout = dtls.nextTimeout { deadlines.append(Self.microseconds(timeout)) }
        return deadlines.min()
    }

    // MARK: Input

    /// One datagram from `source` (see `DatagramKind`).
    public func receive(_ datagram: [UInt8], from source: TransportAddress, now: Int64) -> [WebRTCSessionOutput] {
        guard !ended else { return [] }
        switch DatagramKind(classifying: datagram) {
        case .stun:
            return iceActions(ice.receiveStun(datagram, from: source, now: now), now: now)
        case .dtls:
            guard ice.selectedAddress == source else {
                droppedDatagrams += 1
                return []
            }
            guard dtlsBudget.take(now: now) else {
                dtlsDatagramsDropped += 1
                return []
            }
            let flights = dtls.receive(datagram, now: Self.instant(now))
            return flights.map { .send($0, to: source) } + dtlsProgress()
        case .rtpOrRTCP:
            return receiveMedia(datagram, from: source, now: now)
        case .drop:
            droppedDatagrams += 1
            return []
        }
    }

    /// A composition lost this publisher's video (queue overflow): ask for a keyframe now.
    public func requestKeyframe() {
        receiver.requestKeyframe()
    }

    /// How large the publisher's picture is drawn (nil: compose its largest simulcast layer).
    /// True if the layer to compose changed: poll now to ask it for a keyframe.
    @discardableResult
    public func setWantedVideoSize(_ size: (width: Int, height: Int)?) -> Bool {
        receiver.setWantedVideoSize(size.map { PictureSize(width: $0.width, height: $0.height) })
    }

    /// Timers: ICE consent, DTLS retransmissions, NACKs, reports, keyframe requests.
    public func poll(now: Int64) -> [WebRTCSessionOutput] {
        guard !ended else { return [] }
        var outputs = iceActions(ice.poll(now: now), now: now)
        if ended { return outputs }
        if !isConnected, now - createdAt >= configuration.connectTimeout {
            return outputs + end(.connectTimeout)
        }
        if let timeout = dtls.nextTimeout, Self.microseconds(timeout) <= now, let address = ice.selectedAddress {
            outputs += dtls.handleTimeout(now: Self.instant(now)).map { .send($0, to: address) }
            outputs += dtlsProgress()
        }
        if srtpIn != nil {
            outputs += receiverOutputs(receiver.poll(now: now))
        }
        return outputs
    }

    // MARK: Steps

    private func iceActions(_ actions: [IceAction], now: Int64) -> [WebRTCSessionOutput] {
        var outputs: [WebRTCSessionOutput] = []
        for action in actions {
            switch action {
            case .send(let bytes, let address):
                outputs.append(.send(bytes, to: address))
            case .connected(let address):
                // An ICE-lite server in DTLS client role (offer setup:passive) speaks first,
                // once it knows where the peer is.
                if !dtlsStarted {
                    dtlsStarted = true
                    outputs += dtls.start(now: Self.instant(now)).map { .send($0, to: address) }
                }
            case .disconnected:
                break
            case .consentExpired:
                outputs += end(.consentExpired)
            case .checkFailed:
                stunRefused += 1
            }
        }
        return outputs
    }

    /// Checks the DTLS state after input: keys SRTP once connected, ends on failure or close.
    private func dtlsProgress() -> [WebRTCSessionOutput] {
        switch dtls.state {
        case .handshaking:
            return []
        case .connected(let keys):
            guard srtpIn == nil else { return [] }
            do {
                srtpIn = try SRTPSession(profile: keys.profile, keyAndSalt: keys.remoteKeyAndSalt, direction: .inbound)
                srtpOut = try SRTPSession(profile: keys.profile, keyAndSalt: keys.localKeyAndSalt, direction: .outbound)
            } catch {
                return end(.dtlsFailed(error.reason))
            }
            return [.connected]
        case .failed(let error):
            return end(.dtlsFailed(error.reason))
        case .closed:
            return end(.closedByPeer)
        }
    }

    private func receiveMedia(_ datagram: [UInt8], from source: TransportAddress, now: Int64) -> [WebRTCSessionOutput] {
        guard let srtpIn, ice.selectedAddress == source else {
            droppedDatagrams += 1
            return []
        }
        var packet = datagram
        var outputs: [WebRTCSessionOutput] = []
        let isRTCP = DatagramKind.isRTCP(datagram)
        // The SSRC is in the clear (RTP: bytes 8-11; SRTCP: the sender's, bytes 4-7).
        let offset = isRTCP ? 4 : 8
        guard datagram.count >= offset + 4 else {
            droppedDatagrams += 1
            return []
        }
        let ssrc = datagram[offset..<(offset + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let known = srtpSSRCs.contains(ssrc)
        guard known || srtpSSRCs.count < configuration.maxSRTPStreams else {
            srtpStreamsRefused += 1
            return []
        }
        if isRTCP {
            guard srtpIn.unprotectRTCP(&packet) else { return [] }
            if !known { srtpSSRCs.insert(ssrc) }
            outputs += iceActions(ice.mediaReceived(from: source, now: now), now: now)
            receiver.receiveRTCP(packet, now: now)
        } else {
            guard srtpIn.unprotectRTP(&packet) else { return [] }
            if !known { srtpSSRCs.insert(ssrc) }
            outputs += iceActions(ice.mediaReceived(from: source, now: now), now: now)
            outputs += receiverOutputs(receiver.receiveRTP(packet, now: now))
        }
        return outputs
    }

    private func receiverOutputs(_ outputs: [ReceiverOutput]) -> [WebRTCSessionOutput] {
        var result: [WebRTCSessionOutput] = []
        for output in outputs {
            switch output {
            case .accessUnit(let unit):
                result.append(.media(unit))
            case .rtcp(let compound):
                var packet = compound
                guard let address = ice.selectedAddress, let srtpOut, srtpOut.protectRTCP(&packet) else { continue }
                result.append(.send(packet, to: address))
            }
        }
        return result
    }

    private func end(_ reason: WebRTCSessionEnd) -> [WebRTCSessionOutput] {
        guard !ended else { return [] }
        ended = true
        return [.ended(reason)]
    }

    // MARK: Time

    /// DTLS keeps time as ContinuousClock instants; sessions as µs from an arbitrary origin.
    private static let origin = ContinuousClock.now

    public static func instant(_ microseconds: Int64) -> ContinuousClock.Instant {
        origin.advanced(by: .microseconds(microseconds))
    }

    public static func microseconds(_ instant: ContinuousClock.Instant) -> Int64 {
        let duration = origin.duration(to: instant)
        return duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
    }
}

/// A token bucket on the session clock (µs): `burst` at once, refilled at `perSecond`.
struct TokenBucket {
    private let burst: Int64
    private let perSecond: Int64
    /// Tokens × 1,000,000, so refills need no division.
    private var scaled: Int64
    private var last: Int64

    init(burst: Int, perSecond: Int, now: Int64) {
        // Configuration values, bounded so that no product below can overflow.
        self.burst = Int64(min(max(1, burst), 1_000_000))
        self.perSecond = Int64(min(max(0, perSecond), 1_000_000))
        scaled = self.burst &* 1_000_000
        last = now
    }

    /// Takes one token if there is one.
    mutating func take(now: Int64) -> Bool {
        let elapsed = max(0, min(now &- last, 3_600_000_000))
        last = max(last, now)
        scaled = min(burst &* 1_000_000, scaled &+ elapsed &* perSecond)
        guard scaled >= 1_000_000 else { return false }
        scaled -= 1_000_000
        return true
    }
}
