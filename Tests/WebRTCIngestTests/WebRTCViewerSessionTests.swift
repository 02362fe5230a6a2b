// A whole WHEP viewer transport without sockets: a simulated viewer (its ICE checks, a real
// OpenSSL DTLS client, libsrtp) talks to WebRTCViewerSession datagram by datagram in virtual
// time, with a scripted media source in place of a composition. Covers the check and the
// handshake, what the source has due going out protected on the selected path, the viewer's
// RTCP coming back to the source (and a PLI becoming a keyframe request), the source's end,
// consent expiry, and what a viewer must not send.
import Synchronization
import TestSupport
import Testing
import WebRTCIngest
import WebRTCMedia
import WebRTCSecurity
import WebRTCSignal

/// A source that has `queued` due at once and records the RTCP it is given.
final class ScriptedViewerSource: ViewerMediaSource {
    struct State {
        var queued: [WHEPDatagram] = []
        var feedback: [[UInt8]] = []
        var ended = false
        var answerNACKWith: WHEPDatagram?
    }
    let state = Mutex(State())

    func due(now: Int64, limit: Int, into out: inout [WHEPDatagram]) {
        state.withLock { state in
            out += state.queued.prefix(limit)
            state.queued.removeFirst(min(limit, state.queued.count))
        }
    }

    func feedback(_ compound: [UInt8], now: Int64, into out: inout [WHEPDatagram]) -> Bool {
        state.withLock { state in
            state.feedback.append(compound)
            if let answer = state.answerNACKWith { out.append(answer) }
        }
        let packets = (try? RTCPPacket.parseCompound(compound)) ?? []
        return packets.contains { if case .pictureLossIndication = $0 { return true } else { return false } }
    }

    func nextDeadline(now: Int64) -> Int64? { state.withLock { $0.queued.isEmpty ? nil : now } }
    var isEnded: Bool { state.withLock { $0.ended } }
}

final class ViewerCall {
    let certificate: DTLSCertificate
    let viewerCredentials = IceCredentials(ufrag: "vwr1", pwd: "viewerpasswordviewerpwd0")
    let local = IceCredentials(ufrag: "serv", pwd: "serverpasswordserverpass")
    let address = TransportAddress(ip: .ipv4(127, 0, 0, 1), port: 50_002)
    let session: WebRTCViewerSession
    let source = ScriptedViewerSource()
    let dtls: DTLSEndpoint
    var now: Int64 = 0
    var toViewer: [[UInt8]] = []
    var events: [WebRTCViewerOutput] = []

    init(configuration: WebRTCSessionConfiguration = WebRTCSessionConfiguration()) throws {
        certificate = try DTLSCertificate.generate()
        let serverCertificate = try DTLSCertificate.generate()
        let offer = Self.offer(credentials: viewerCredentials, fingerprint: certificate.fingerprintSHA256Text)
        let negotiation = try WHEPNegotiator.negotiate(offer: offer, options: WHEPAnswerOptions(
            localCredentials: local, localFingerprintSHA256: serverCertificate.fingerprintSHA256Text,
            candidates: [TransportAddress(ip: .ipv4(127, 0, 0, 1), port: 5000)], sessionID: 9,
            videoProfileLevelID: H264ProfileLevelID("4d4028")!, profileMatching: .anyOffered,
            streams: WHEPLocalStreams(cname: "c", streamID: "s", audioTrackID: "a", videoTrackID: "v",
                                      audioSSRC: 11, videoSSRC: 22, videoRTXSSRC: 33)))
        session = try WebRTCViewerSession(negotiation: negotiation, localCredentials: local, certificate: serverCertificate,
                                          source: source, configuration: configuration, now: 0)
        // An actpass offer: we answer passive (DTLS server), the viewer is the client.
        dtls = try DTLSEndpoint(role: .client, certificate: certificate,
                                remoteFingerprint: (algorithm: "sha-256", bytes: serverCertificate.fingerprintSHA256))
    }

    static func offer(credentials: IceCredentials, fingerprint: String) -> String {
        let transport = ["a=ice-ufrag:\(credentials.ufrag)", "a=ice-pwd:\(credentials.pwd)", "a=fingerprint:sha-256 \(fingerprint)",
                         "a=setup:actpass", "a=recvonly", "a=rtcp-mux"]
        let lines = ["v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0 1",
                     "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=mid:0"] + transport
            + ["a=rtpmap:111 opus/48000/2", "m=video 9 UDP/TLS/RTP/SAVPF 96", "c=IN IP4 0.0.0.0", "a=mid:1"] + transport
            + ["a=rtpmap:96 H264/90000", "a=rtcp-fb:96 nack", "a=rtcp-fb:96 nack pli",
               "a=fmtp:96 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"]
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    func deliver(_ outputs: [WebRTCViewerOutput]) {
        for output in outputs {
            if case .send(let bytes, let to) = output {
                #expect(to == address)
                toViewer.append(bytes)
            } else {
                events.append(output)
            }
        }
    }

    func send(_ datagram: [UInt8], from: TransportAddress? = nil) {
        var out: [WebRTCViewerOutput] = []
        session.receive(datagram, from: from ?? address, now: now, into: &out)
        deliver(out)
    }

    func poll() {
        var out: [WebRTCViewerOutput] = []
        session.poll(now: now, into: &out)
        deliver(out)
    }

    func check() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        let request = STUNMessage(type: .bindingRequest, transactionID: .random(using: &generator),
                                  attributes: [.username("\(local.ufrag):\(viewerCredentials.ufrag)"), .priority(1_853_824_767),
                                               .iceControlling(7), .useCandidate])
        return request.encode(integrity: STUNIntegrityKey(key: Array(local.pwd.utf8), hmacSHA1: WebRTCPublisherSession.hmacSHA1),
                              fingerprint: true)
    }

    func connect() {
        send(check())
        var toServer = dtls.start(now: .now)
        for _ in 0..<20 {
            for datagram in toServer { send(datagram) }
            toServer = []
            let replies = toViewer.filter { DatagramKind(classifying: $0) == .dtls }
            toViewer.removeAll { DatagramKind(classifying: $0) == .dtls }
            for reply in replies { toServer += dtls.receive(reply, now: .now) }
            if toServer.isEmpty && replies.isEmpty { break }
        }
    }

    /// The viewer's SRTP contexts, mirrored from the handshake.
    func viewerSRTP() throws -> (inbound: SRTPSession, outbound: SRTPSession) {
        guard case .connected(let keys) = dtls.state else { throw DTLSError(reason: "not connected") }
        return (try SRTPSession(profile: keys.profile, keyAndSalt: keys.remoteKeyAndSalt, direction: .inbound),
                try SRTPSession(profile: keys.profile, keyAndSalt: keys.localKeyAndSalt, direction: .outbound))
    }
}

@Suite struct WebRTCViewerSessionTests {
    @Test("a viewer connects; what the source has due goes out SRTP-protected; its PLI comes back as a keyframe request")
    func mediaFlows() throws {
        let call = try ViewerCall()
        let rtp = try RTPPacket(marker: true, payloadType: 96, sequenceNumber: 1, timestamp: 900, ssrc: 22,
                                payload: [0x65] + Array(repeating: 0x11, count: 300)).serialized()
        let report = try RTCPPacket.senderReport(RTCPSenderReport(ssrc: 22, ntpTime: 1 << 32, rtpTimestamp: 900,
                                                                  packetCount: 1, octetCount: 301)).serialized()
        call.source.state.withLock { $0.queued = [WHEPDatagram(bytes: rtp, isRTCP: false), WHEPDatagram(bytes: report, isRTCP: true)] }
        // Nothing leaves before DTLS is up.
        call.poll()
        #expect(call.toViewer.isEmpty)
        call.connect()
        #expect(call.events.contains(.connected))
        #expect(call.session.isConnected)
        call.toViewer.removeAll()
        call.now += 10_000
        call.poll()
        let (inbound, outbound) = try call.viewerSRTP()
        #expect(call.toViewer.count == 2)
        var media = try #require(call.toViewer.first), control = try #require(call.toViewer.last)
        #expect(media != rtp, "sent in the clear")
        #expect(inbound.unprotectRTP(&media))
        #expect(media == rtp)
        #expect(inbound.unprotectRTCP(&control))
        #expect(control == report)
        #expect(call.session.statistics.packetsSent == 2)

        // A PLI (with a receiver report, as browsers send them): the source sees it decrypted,
        // its answer goes out protected, and the owner hears that a keyframe is wanted.
        let retransmission = try RTPPacket(payloadType: 96, sequenceNumber: 2, timestamp: 900, ssrc: 22, payload: [1, 2]).serialized()
        call.source.state.withLock { $0.answerNACKWith = WHEPDatagram(bytes: retransmission, isRTCP: false) }
        let pli = try RTCPPacket.serializeCompound([.receiverReport(RTCPReceiverReport(ssrc: 5)),
                                                     .pictureLossIndication(RTCPPictureLossIndication(senderSSRC: 5, mediaSSRC: 22))])
        var protected = pli
        #expect(outbound.protectRTCP(&protected))
        call.toViewer.removeAll()
        call.send(protected)
        #expect(call.source.state.withLock { $0.feedback } == [pli])
        #expect(call.events.last == .keyframeWanted)
        var answer = try #require(call.toViewer.first)
        #expect(inbound.unprotectRTP(&answer))
        #expect(answer == retransmission)
        #expect(call.session.statistics.rtcpReceived == 1)

        // The same SRTCP again is a replay: not given to the source.
        call.send(protected)
        #expect(call.source.state.withLock { $0.feedback.count } == 1)
        // RTP from the viewer (it only receives) and RTCP from another address are dropped.
        var stray = try RTPPacket(payloadType: 96, sequenceNumber: 9, timestamp: 0, ssrc: 5, payload: [1]).serialized()
        #expect(outbound.protectRTP(&stray))
        call.send(stray)
        var other = try RTCPPacket.serializeCompound([.receiverReport(RTCPReceiverReport(ssrc: 5))])
        #expect(outbound.protectRTCP(&other))
        call.send(other, from: TransportAddress(ip: .ipv4(127, 0, 0, 1), port: 40_000))
        #expect(call.source.state.withLock { $0.feedback.count } == 1)
        #expect(call.session.statistics.droppedDatagrams == 2)

        // The composition ends: the session ends once, saying so.
        call.source.state.withLock { $0.ended = true }
        call.poll()
        call.poll()
        #expect(call.events.filter { if case .ended = $0 { true } else { false } } == [.ended(.mediaEnded)])
    }

    @Test("a viewer that stops checking and sending RTCP loses consent; one that keeps sending RTCP keeps it")
    func consent() throws {
        var configuration = WebRTCSessionConfiguration()
        configuration.ice.consentTimeout = 5_000_000
        let silent = try ViewerCall(configuration: configuration)
        silent.connect()
        #expect(silent.session.isConnected)
        let talking = try ViewerCall(configuration: configuration)
        talking.connect()
        let (_, outbound) = try talking.viewerSRTP()
        for _ in 0..<10 {
            silent.now += 1_000_000
            talking.now += 1_000_000
            var report = try RTCPPacket.serializeCompound([.receiverReport(RTCPReceiverReport(ssrc: 5))])
            #expect(outbound.protectRTCP(&report))
            talking.send(report)
            silent.poll()
            talking.poll()
        }
        #expect(silent.events.last == .ended(.consentExpired))
        #expect(!talking.events.contains { if case .ended = $0 { true } else { false } })
    }

    @Test("no ICE or DTLS within the connect timeout ends the session")
    func connectTimeout() throws {
        var configuration = WebRTCSessionConfiguration()
        configuration.connectTimeout = 2_000_000
        let call = try ViewerCall(configuration: configuration)
        call.send(call.check())
        call.now = try #require(call.session.nextDeadline(now: call.now))
        call.now = max(call.now, 2_000_000)
        call.poll()
        #expect(call.events.last == .ended(.connectTimeout))
    }
}
