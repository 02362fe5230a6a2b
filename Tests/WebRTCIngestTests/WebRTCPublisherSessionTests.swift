// A whole WHIP transport session without sockets: a simulated browser (its own ICE checks,
// a real OpenSSL DTLS client, libsrtp) talks to WebRTCPublisherSession datagram by datagram,
// in virtual time. Covers the connectivity check, the handshake in both directions, SRTP
// with each profile, media out as access units, RTCP feedback back (protected), consent
// expiry, wrong ICE passwords, a fingerprint mismatch, and garbage.
import TestSupport
import Testing
import WebRTCIngest
import WebRTCMedia
import WebRTCPublisher
import WebRTCSecurity
import WebRTCSignal

struct SimulatedBrowser {
    let certificate: DTLSCertificate
    let credentials = IceCredentials(ufrag: "peer", pwd: "peerpasswordpeerpassword")
    let address = TransportAddress(ip: .ipv4(127, 0, 0, 1), port: 50_000)

    static func make() throws -> SimulatedBrowser { SimulatedBrowser(certificate: try DTLSCertificate.generate()) }

    func offer(setup: String = "actpass", fingerprint: String? = nil) -> String {
        Offers.h264Opus(ufrag: credentials.ufrag, pwd: credentials.pwd, fingerprint: fingerprint ?? certificate.fingerprintSHA256Text,
                        setup: setup, rtx: false, cname: "browser")
    }

    func check(to local: IceCredentials, password: String? = nil, nominate: Bool = true) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var attributes: [STUNAttribute] = [.username("\(local.ufrag):\(credentials.ufrag)"), .priority(1_853_824_767),
                                           .iceControlling(42)]
        if nominate { attributes.append(.useCandidate) }
        let request = STUNMessage(type: .bindingRequest, transactionID: .random(using: &generator), attributes: attributes)
        return request.encode(integrity: STUNIntegrityKey(key: Array((password ?? local.pwd).utf8),
                                                          hmacSHA1: WebRTCPublisherSession.hmacSHA1),
                              fingerprint: true)
    }
}

/// A session and a browser wired together.
final class Call {
    let browser: SimulatedBrowser
    let server: WebRTCPublisherSession
    let dtls: DTLSEndpoint
    let local = IceCredentials(ufrag: "serv", pwd: "serverpasswordserverpass")
    var now: Int64 = 0
    var media: [ReceivedAccessUnit] = []
    var toBrowser: [[UInt8]] = []
    var ended: WebRTCSessionEnd?
    var connected = false

    init(setup: String = "actpass", offerFingerprint: String? = nil, configuration: WebRTCSessionConfiguration = WebRTCSessionConfiguration()) throws {
        browser = try SimulatedBrowser.make()
        let serverCertificate = try DTLSCertificate.generate()
        let negotiation = try SDPNegotiator.negotiate(offer: browser.offer(setup: setup, fingerprint: offerFingerprint), options: SDPAnswerOptions(
            localCredentials: local, localFingerprintSHA256: serverCertificate.fingerprintSHA256Text,
            candidate: TransportAddress(ip: .ipv4(127, 0, 0, 1), port: 5000), sessionID: 7))
        server = try WebRTCPublisherSession(negotiation: negotiation, localCredentials: local, certificate: serverCertificate,
                                            configuration: configuration, now: 0)
        dtls = try DTLSEndpoint(role: negotiation.isDTLSClient ? .server : .client, certificate: browser.certificate,
                                remoteFingerprint: (algorithm: "sha-256", bytes: serverCertificate.fingerprintSHA256))
    }

    func deliver(_ outputs: [WebRTCSessionOutput]) {
        for output in outputs {
            switch output {
            case .send(let bytes, let address):
                #expect(address == browser.address)
                toBrowser.append(bytes)
            case .media(let unit): media.append(unit)
            case .connected: connected = true
            case .ended(let reason):
                #expect(ended == nil, "ended twice")
                ended = reason
            }
        }
    }

    func send(_ datagram: [UInt8]) { deliver(server.receive(datagram, from: browser.address, now: now)) }

    /// Checks, then shuttles DTLS both ways until neither side has more to say.
    func connect() {
        send(browser.check(to: local))
        var toServer = dtls.start(now: .now)
        for _ in 0..<20 {
            for datagram in toServer { send(datagram) }
            toServer = []
            let replies = toBrowser.filter { DatagramKind(classifying: $0) == .dtls }
            toBrowser.removeAll { DatagramKind(classifying: $0) == .dtls }
            for reply in replies { toServer += dtls.receive(reply, now: .now) }
            if toServer.isEmpty && replies.isEmpty { break }
        }
    }

    var keys: SRTPKeyingMaterial? {
        if case .connected(let keys) = dtls.state { return keys }
        return nil
    }
}

@Suite struct WebRTCPublisherSessionTests {
    @Test("a browser's check is answered, DTLS connects with the SRTP keys mirrored, media comes out whole")
    func fullSession() throws {
        let call = try Call()
        call.send(call.browser.check(to: call.local))
        let response = try STUNMessage.decode(try #require(call.toBrowser.first))
        #expect(response.type == .bindingSuccess)
        #expect(response.xorMappedAddress == call.browser.address)
        call.toBrowser.removeAll()
        call.connect()
        #expect(call.connected)
        let keys = try #require(call.keys)
        let protect = try SRTPSession(profile: keys.profile, keyAndSalt: keys.localKeyAndSalt, direction: .outbound)
        let unprotect = try SRTPSession(profile: keys.profile, keyAndSalt: keys.remoteKeyAndSalt, direction: .inbound)

        // An IDR access unit (SPS, PPS, IDR as single NAL packets, marker on the last) and Opus.
        let nals: [[UInt8]] = [[0x67, 0x42, 0xE0, 0x1F, 1, 2, 3], [0x68, 0xCE, 0x3C, 0x80], [0x65] + Array(repeating: 0xAB, count: 900)]
        for (index, nal) in nals.enumerated() {
            var packet = try RTPPacket(marker: index == nals.count - 1, payloadType: 102, sequenceNumber: UInt16(100 + index),
                                       timestamp: 9000, ssrc: 2222, payload: nal).serialized()
            #expect(protect.protectRTP(&packet))
            call.now += 1000
            call.send(packet)
        }
        for index in 0..<5 {
            var packet = try RTPPacket(marker: index == 0, payloadType: 111, sequenceNumber: UInt16(7 + index),
                                       timestamp: UInt32(960 * index), ssrc: 1111, payload: [0xFC, UInt8(index), 0xFF]).serialized()
            #expect(protect.protectRTP(&packet))
            call.now += 20_000
            call.send(packet)
        }
        // Held back only by the reorder buffer; polling past its delay releases everything.
        call.now += 500_000
        call.deliver(call.server.poll(now: call.now))
        let video = call.media.filter { $0.kind == .video }, audio = call.media.filter { $0.kind == .audio }
        #expect(video.count == 1 && video.first?.isKeyframe == true)
        #expect(video.first?.data == nals.flatMap { [0, 0, 0, 1] + $0 })
        #expect(audio.map(\.data) == (0..<5).map { [0xFC, UInt8($0), 0xFF] })
        // Feedback went back protected, and the browser's inbound SRTP opens it.
        let feedback = call.toBrowser.filter { DatagramKind.isRTCP($0) }
        #expect(!feedback.isEmpty)
        for var packet in feedback {
            #expect(unprotect.unprotectRTCP(&packet))
            #expect(throws: Never.self) { try RTCPPacket.parseCompound(packet) }
        }
        // The same packet again is a replay, dropped and counted.
        var replay = try RTPPacket(payloadType: 111, sequenceNumber: 50, timestamp: 0, ssrc: 1111, payload: [1]).serialized()
        #expect(protect.protectRTP(&replay))
        call.send(replay)
        call.send(replay)
        #expect(call.server.statistics.srtp.replayedPackets == 1)
        #expect(call.ended == nil)
    }

    @Test("an SSRC flood keeps SRTP state for at most maxSRTPStreams SSRCs; the declared streams still flow")
    func ssrcFloodIsBounded() throws {
        let call = try Call(configuration: WebRTCSessionConfiguration(maxSRTPStreams: 4))
        call.connect()
        let keys = try #require(call.keys)
        let protect = try SRTPSession(profile: keys.profile, keyAndSalt: keys.localKeyAndSalt, direction: .outbound)
        // Audio first (a declared stream takes a slot), then 2,000 SSRCs the offer never named.
        var opus = try RTPPacket(marker: true, payloadType: 111, sequenceNumber: 1, timestamp: 0, ssrc: 1111, payload: [0xFC, 1]).serialized()
        #expect(protect.protectRTP(&opus))
        call.send(opus)
        for index in 0..<2000 {
            var packet = try RTPPacket(payloadType: 102, sequenceNumber: UInt16(index), timestamp: 0, ssrc: 0x4000_0000 + UInt32(index),
                                       payload: [0x41, 1, 2]).serialized()
            #expect(protect.protectRTP(&packet))
            call.send(packet)
        }
        let statistics = call.server.statistics
        #expect(statistics.srtpStreamsRefused == 1997)
        #expect(statistics.receiver.undeclaredStreamPackets == 3)
        // The declared audio stream still decrypts and delivers.
        for index in 1..<4 {
            var packet = try RTPPacket(payloadType: 111, sequenceNumber: UInt16(1 + index), timestamp: UInt32(960 * index), ssrc: 1111,
                                       payload: [0xFC, UInt8(index)]).serialized()
            #expect(protect.protectRTP(&packet))
            call.now += 20_000
            call.send(packet)
        }
        call.now += 500_000
        call.deliver(call.server.poll(now: call.now))
        #expect(call.media.filter { $0.kind == .audio }.count == 4)
        #expect(call.ended == nil)
    }

    @Test("DTLS datagrams beyond the session's budget are dropped unprocessed, and the budget refills")
    func dtlsBudget() throws {
        let call = try Call(configuration: WebRTCSessionConfiguration(dtlsBurst: 10, dtlsPerSecond: 2))
        call.send(call.browser.check(to: call.local))
        let hello = try #require(call.dtls.start(now: .now).first)
        for _ in 0..<100 { call.send(hello) }
        #expect(call.server.statistics.dtlsDatagramsDropped == 90)
        call.now += 1_000_000
        for _ in 0..<10 { call.send(hello) }
        #expect(call.server.statistics.dtlsDatagramsDropped == 98)
        #expect(call.ended == nil)
    }

    @Test("an offer with setup:passive makes the server the DTLS client", arguments: ["passive", "actpass"])
    func bothRoles(setup: String) throws {
        let call = try Call(setup: setup)
        call.connect()
        #expect(call.connected)
        #expect(call.keys != nil)
    }

    @Test("consent expires without checks or media, and the session ends once")
    func consentExpiry() throws {
        let call = try Call(configuration: WebRTCSessionConfiguration(ice: IceLiteAgent.Configuration(consentTimeout: 5_000_000)))
        call.connect()
        #expect(call.connected)
        call.now = 4_000_000
        call.deliver(call.server.poll(now: call.now))
        #expect(call.ended == nil)
        call.send(call.browser.check(to: call.local, nominate: false))
        call.now = 8_900_000
        call.deliver(call.server.poll(now: call.now))
        #expect(call.ended == nil)
        call.now = 9_100_000
        call.deliver(call.server.poll(now: call.now))
        #expect(call.ended == .consentExpired)
        #expect(call.server.poll(now: call.now + 10_000_000).isEmpty)
        #expect(call.server.nextDeadline == nil)
    }

    @Test("a check with the wrong password is answered 401 and selects nothing")
    func wrongPassword() throws {
        let call = try Call()
        call.send(call.browser.check(to: call.local, password: "wrongpasswordwrongpasswo"))
        let response = try STUNMessage.decode(try #require(call.toBrowser.first))
        #expect(response.type == .bindingError)
        #expect(response.errorCode?.code == 401)
        #expect(call.server.remoteAddress == nil)
        #expect(call.server.statistics.stunRefused == 1)
    }

    @Test("a certificate that is not the offer's fingerprint fails DTLS with that reason")
    func fingerprintMismatch() throws {
        let other = try DTLSCertificate.generate()
        let call = try Call(offerFingerprint: other.fingerprintSHA256Text)
        call.connect()
        #expect(!call.connected)
        guard case .dtlsFailed(let reason)? = call.ended else {
            Issue.record("expected a DTLS failure, got \(String(describing: call.ended))")
            return
        }
        #expect(reason.contains("fingerprint"))
    }

    @Test("garbage, and media before DTLS, are dropped and counted; the session still connects")
    func garbage() throws {
        let call = try Call()
        var random = SystemRandomNumberGenerator()
        for size in [0, 1, 13, 100, 1500] {
            call.send((0..<size).map { _ in UInt8.random(in: 0...255, using: &random) })
        }
        call.send([0x80, 0x60] + [UInt8](repeating: 0, count: 40))
        call.send([0x16, 0xFE, 0xFD] + [UInt8](repeating: 0xFF, count: 40))
        #expect(call.server.statistics.droppedDatagrams >= 2)
        call.connect()
        #expect(call.connected)
        #expect(call.ended == nil)
        // Garbage after the handshake, too.
        call.send([0x17, 0xFE, 0xFD] + [UInt8](repeating: 0x42, count: 60))
        call.send([0x80, 0x66] + [UInt8](repeating: 0x42, count: 60))
        #expect(call.ended == nil)
        #expect(call.server.statistics.srtp.authenticationFailures + call.server.statistics.srtp.otherFailures >= 1)
    }

    @Test("no ICE or DTLS within the connect timeout ends the session")
    func connectTimeout() throws {
        let call = try Call(configuration: WebRTCSessionConfiguration(connectTimeout: 3_000_000))
        call.send(call.browser.check(to: call.local))
        call.now = 3_000_000
        call.deliver(call.server.poll(now: call.now))
        #expect(call.ended == .connectTimeout)
    }
}

@Suite struct SRTPSessionTests {
    @Test("each profile round-trips RTP and RTCP; tampering is an authentication failure", arguments: SRTPProfile.allCases)
    func roundTrip(profile: SRTPProfile) throws {
        let key = (0..<(profile.keyLength + profile.saltLength)).map { UInt8($0 * 7 & 0xFF) }
        let sender = try SRTPSession(profile: profile, keyAndSalt: key, direction: .outbound)
        let receiver = try SRTPSession(profile: profile, keyAndSalt: key, direction: .inbound)
        let plain = try RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 1, ssrc: 5, payload: Array(repeating: 9, count: 300)).serialized()
        var packet = plain
        #expect(sender.protectRTP(&packet))
        #expect(packet.count > plain.count && packet != plain)
        var tampered = packet
        tampered[20] ^= 1
        #expect(!receiver.unprotectRTP(&tampered))
        #expect(receiver.statistics.authenticationFailures == 1)
        #expect(receiver.unprotectRTP(&packet))
        #expect(packet == plain)
        let rtcp = try RTCPPacket.serializeCompound([.pictureLossIndication(RTCPPictureLossIndication(senderSSRC: 1, mediaSSRC: 5))])
        var protected = rtcp
        #expect(sender.protectRTCP(&protected))
        #expect(receiver.unprotectRTCP(&protected))
        #expect(protected == rtcp)
    }

    @Test("the replay window takes a retransmission 950 packets late, not 1150")
    func replayWindow() throws {
        let profile = SRTPProfile.aes128CmSha1_80
        let key = [UInt8](repeating: 3, count: 30)
        let sender = try SRTPSession(profile: profile, keyAndSalt: key, direction: .outbound)
        let receiver = try SRTPSession(profile: profile, keyAndSalt: key, direction: .inbound)
        var held: [UInt16: [UInt8]] = [:]
        for sequence in UInt16(1)...1200 {
            var packet = try RTPPacket(payloadType: 96, sequenceNumber: sequence, timestamp: 0, ssrc: 5, payload: [1, 2, 3]).serialized()
            #expect(sender.protectRTP(&packet))
            if sequence == 250 || sequence == 50 { held[sequence] = packet; continue }
            #expect(receiver.unprotectRTP(&packet))
        }
        var late = try #require(held[250]), tooLate = try #require(held[50])
        #expect(receiver.unprotectRTP(&late))
        #expect(!receiver.unprotectRTP(&tooLate))
        #expect(receiver.statistics.replayedPackets == 1)
    }
}
