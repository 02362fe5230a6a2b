// The ICE-lite agent fed Binding requests shaped like a browser's, on a virtual clock.
import Testing
@testable import WebRTCSignal
import TestSupport

private let local = IceCredentials(ufrag: "srvA", pwd: "serverpasswordserverpass")
private let remote = IceCredentials(ufrag: "brws", pwd: "browserpasswordbrowserp")
private let peerA = TransportAddress.v4(198, 51, 100, 7, port: 50000)
private let peerB = TransportAddress.v4(203, 0, 113, 9, port: 61000)
private let second: Int64 = 1_000_000

/// A check as Chrome sends it: USERNAME, ICE-CONTROLLING, PRIORITY, maybe USE-CANDIDATE,
/// MESSAGE-INTEGRITY keyed with the answerer's password, FINGERPRINT.
private func check(username: String = "srvA:brws", password: String = local.pwd, useCandidate: Bool = false,
                   priority: UInt32? = 1_853_817_087, extra: [STUNAttribute] = [], integrity: Bool = true,
                   id: UInt8 = 1) -> [UInt8] {
    var attributes: [STUNAttribute] = [.username(username), .iceControlling(0x1122_3344_5566_7788)]
    if let priority { attributes.append(.priority(priority)) }
    if useCandidate { attributes.append(.useCandidate) }
    attributes += extra
    let message = STUNMessage(type: .bindingRequest, transactionID: STUNTransactionID(bytes: [UInt8](repeating: id, count: 12))!,
                              attributes: attributes)
    return message.encode(integrity: integrity ? STUNIntegrityKey(key: Array(password.utf8), hmacSHA1: testHMACSHA1) : nil,
                          fingerprint: true)
}

private func makeAgent(now: Int64 = 0, configuration: IceLiteAgent.Configuration = .init()) -> IceLiteAgent {
    IceLiteAgent(local: local, remote: remote, hmacSHA1: testHMACSHA1, configuration: configuration, now: now)
}

/// The datagram of the first `.send` action, decoded, with its raw bytes.
private func sentResponse(_ actions: [IceAction]) throws -> (message: STUNMessage, bytes: [UInt8], to: TransportAddress) {
    for action in actions {
        if case .send(let bytes, let to) = action { return (try STUNMessage.decode(bytes), bytes, to) }
    }
    Issue.record("no response in \(actions)")
    throw STUNError.truncated(needed: 1, available: 0)
}

struct IceLiteAgentTests {
    @Test("a valid check gets a success response with XOR-MAPPED-ADDRESS, integrity and fingerprint, and connects")
    func validCheck() throws {
        var agent = makeAgent()
        let actions = agent.receiveStun(check(id: 7), from: peerA, now: 1 * second)
        let response = try sentResponse(actions)
        #expect(response.to == peerA)
        #expect(response.message.type == .bindingSuccess)
        #expect(response.message.transactionID == STUNTransactionID(bytes: [UInt8](repeating: 7, count: 12)))
        #expect(response.message.xorMappedAddress == peerA)
        #expect(STUN.checkIntegrity(response.bytes, key: Array(local.pwd.utf8), hmacSHA1: testHMACSHA1) == .valid)
        #expect(STUN.checkFingerprint(response.bytes) == .valid)
        #expect(actions.last == .connected(peerA))
        #expect(agent.selectedAddress == peerA)
        #expect(agent.isConnected)
    }

    @Test("the response to an IPv6 peer carries its IPv6 address")
    func ipv6Peer() throws {
        var agent = makeAgent()
        let peer = TransportAddress(ip: IPAddress("2001:db8::42")!, port: 5000)
        let response = try sentResponse(agent.receiveStun(check(), from: peer, now: 0))
        #expect(response.message.xorMappedAddress == peer)
    }

    @Test("a check without PRIORITY is still accepted")
    func missingPriority() throws {
        var agent = makeAgent()
        let actions = agent.receiveStun(check(priority: nil), from: peerA, now: 0)
        #expect(try sentResponse(actions).message.type == .bindingSuccess)
        #expect(actions.last == .connected(peerA))
    }

    @Test("wrong password: 401 without MESSAGE-INTEGRITY, and an action saying why")
    func wrongPassword() throws {
        var agent = makeAgent()
        let actions = agent.receiveStun(check(password: "notthepasswordatallnope"), from: peerA, now: 0)
        let response = try sentResponse(actions)
        #expect(response.message.type == .bindingError)
        #expect(response.message.errorCode?.code == 401)
        #expect(response.message.messageIntegrity == nil)
        #expect(STUN.checkFingerprint(response.bytes) == .valid)
        #expect(actions.last == .checkFailed(.badIntegrity, from: peerA))
        #expect(agent.selectedAddress == nil)
    }

    @Test("a username that is not \"localUfrag:remoteUfrag\" gets 401", arguments: ["brws:srvA", "srvA:other", "srvA", "x:brws"])
    func wrongUsername(username: String) throws {
        var agent = makeAgent()
        let actions = agent.receiveStun(check(username: username), from: peerA, now: 0)
        #expect(try sentResponse(actions).message.errorCode?.code == 401)
        #expect(actions.last == .checkFailed(.unknownUsername(username), from: peerA))
    }

    @Test("missing USERNAME or MESSAGE-INTEGRITY gets 400")
    func missingCredentials() throws {
        var agent = makeAgent()
        let noUsername = STUNMessage(type: .bindingRequest, transactionID: STUNTransactionID(bytes: [UInt8](repeating: 3, count: 12))!,
                                     attributes: [.priority(1)])
            .encode(integrity: STUNIntegrityKey(key: Array(local.pwd.utf8), hmacSHA1: testHMACSHA1), fingerprint: true)
        var actions = agent.receiveStun(noUsername, from: peerA, now: 0)
        #expect(try sentResponse(actions).message.errorCode?.code == 400)
        #expect(actions.last == .checkFailed(.missingUsername, from: peerA))

        actions = agent.receiveStun(check(integrity: false), from: peerA, now: 0)
        #expect(try sentResponse(actions).message.errorCode?.code == 400)
        #expect(actions.last == .checkFailed(.missingIntegrity, from: peerA))
        #expect(!agent.isConnected)
    }

    @Test("unknown comprehension-required attributes get 420 listing them, integrity-protected")
    func unknownAttribute() throws {
        var agent = makeAgent()
        let actions = agent.receiveStun(check(extra: [.other(type: 0x0077, value: [1, 2, 3, 4]), .other(type: 0xC057, value: [0, 1, 0, 5])]),
                                        from: peerA, now: 0)
        let response = try sentResponse(actions)
        #expect(response.message.errorCode?.code == 420)
        #expect(response.message.attributes.contains(.unknownAttributes([0x0077])))
        #expect(STUN.checkIntegrity(response.bytes, key: Array(local.pwd.utf8), hmacSHA1: testHMACSHA1) == .valid)
        #expect(actions.last == .checkFailed(.unknownAttributes([0x0077]), from: peerA))
    }

    @Test("a peer that also claims ICE-CONTROLLED gets 487 Role Conflict")
    func roleConflict() throws {
        var agent = makeAgent()
        let actions = agent.receiveStun(check(extra: [.iceControlled(9)]), from: peerA, now: 0)
        #expect(try sentResponse(actions).message.errorCode?.code == 487)
        #expect(actions.last == .checkFailed(.roleConflict, from: peerA))
    }

    @Test("garbage, bad fingerprints, indications and responses get no answer")
    func dropped() {
        var agent = makeAgent()
        #expect(agent.receiveStun([0, 1, 0], from: peerA, now: 0) == [.checkFailed(.malformed(.truncated(needed: 20, available: 3)), from: peerA)])

        var corrupted = check()
        corrupted[corrupted.count - 1] ^= 0xFF
        #expect(agent.receiveStun(corrupted, from: peerA, now: 0) == [.checkFailed(.badFingerprint, from: peerA)])

        let indication = STUNMessage(type: .bindingIndication, transactionID: STUNTransactionID(bytes: [UInt8](repeating: 1, count: 12))!)
        #expect(agent.receiveStun(indication.encode(fingerprint: true), from: peerA, now: 0).isEmpty)

        let success = STUNMessage(type: .bindingSuccess, transactionID: STUNTransactionID(bytes: [UInt8](repeating: 1, count: 12))!)
        #expect(agent.receiveStun(success.encode(), from: peerA, now: 0).isEmpty)

        let allocate = STUNMessage(type: STUNMessageType(method: 0x003, messageClass: .request),
                                   transactionID: STUNTransactionID(bytes: [UInt8](repeating: 1, count: 12))!)
        #expect(agent.receiveStun(allocate.encode(), from: peerA, now: 0) == [.checkFailed(.unsupportedMethod(3), from: peerA)])
        #expect(agent.selectedAddress == nil)
    }

    @Test("before nomination the first valid address is used; USE-CANDIDATE from another moves it")
    func nominationMoves() {
        var agent = makeAgent()
        #expect(agent.receiveStun(check(), from: peerA, now: 0).last == .connected(peerA))
        // A plain check from another address does not move an unnominated selection.
        #expect(agent.receiveStun(check(), from: peerB, now: 1).count == 1)
        #expect(agent.selectedAddress == peerA)
        #expect(agent.receiveStun(check(useCandidate: true), from: peerB, now: 2).last == .connected(peerB))
        #expect(agent.selectedAddress == peerB)
        // Checks on the old path are answered but change nothing.
        #expect(agent.receiveStun(check(), from: peerA, now: 3).count == 1)
        #expect(agent.selectedAddress == peerB)
    }

    @Test("a later nominated check from a new address switches (NAT rebinding)")
    func natRebinding() {
        var agent = makeAgent()
        _ = agent.receiveStun(check(useCandidate: true), from: peerA, now: 0)
        let rebound = TransportAddress.v4(198, 51, 100, 7, port: 50123)
        #expect(agent.receiveStun(check(useCandidate: true), from: rebound, now: 5 * second).last == .connected(rebound))
        #expect(agent.selectedAddress == rebound)
    }

    @Test("aggressive nomination: a lower-priority nominated pair does not replace a higher one")
    func aggressiveNomination() {
        var agent = makeAgent()
        _ = agent.receiveStun(check(useCandidate: true, priority: 2_000_000_000), from: peerA, now: 0)
        #expect(agent.receiveStun(check(useCandidate: true, priority: 1_000_000_000), from: peerB, now: 1).count == 1)
        #expect(agent.selectedAddress == peerA)
        let better = TransportAddress.v4(192, 0, 2, 99, port: 4000)
        #expect(agent.receiveStun(check(useCandidate: true, priority: 2_100_000_000), from: better, now: 2).last == .connected(better))
    }

    @Test("consent expires when no valid check arrives for 30 s, even before the first one")
    func consentExpiresWithoutChecks() {
        var agent = makeAgent(now: 100)
        #expect(agent.nextDeadline == 100 + 30 * second)
        #expect(agent.poll(now: 100 + 30 * second - 1).isEmpty)
        #expect(agent.poll(now: 100 + 30 * second) == [.consentExpired])
        #expect(agent.isExpired)
        #expect(agent.nextDeadline == nil)
        #expect(agent.poll(now: 200 * second).isEmpty)
        // After expiry nothing is answered any more.
        #expect(agent.receiveStun(check(), from: peerA, now: 201 * second).isEmpty)
    }

    @Test("valid checks refresh consent; silence on the selected path disconnects, a check reconnects")
    func consentAndDisconnect() {
        var agent = makeAgent()
        _ = agent.receiveStun(check(useCandidate: true), from: peerA, now: 1 * second)
        #expect(agent.nextDeadline == 11 * second)
        _ = agent.receiveStun(check(), from: peerA, now: 6 * second)
        #expect(agent.nextDeadline == 16 * second)
        #expect(agent.poll(now: 15 * second).isEmpty)
        #expect(agent.poll(now: 16 * second) == [.disconnected])
        #expect(!agent.isConnected)
        #expect(agent.selectedAddress == peerA)
        #expect(agent.nextDeadline == 36 * second)
        #expect(agent.receiveStun(check(), from: peerA, now: 20 * second).last == .connected(peerA))
        #expect(agent.poll(now: 49 * second) == [.disconnected])
        #expect(agent.poll(now: 50 * second) == [.consentExpired])
    }

    @Test("checks on another path keep consent fresh; once the selected path is silent the selection moves there")
    func consentFromOtherPath() {
        var agent = makeAgent()
        _ = agent.receiveStun(check(useCandidate: true), from: peerA, now: 0)
        var reported: [IceAction] = []
        for time in stride(from: 5, through: 45, by: 5).map({ Int64($0) * second }) {
            reported += agent.receiveStun(check(), from: peerB, now: time).filter { !$0.isSend }
            reported += agent.poll(now: time)
        }
        #expect(reported == [.disconnected, .connected(peerB)])
        #expect(!agent.isExpired)
        #expect(agent.isConnected)
        #expect(agent.selectedAddress == peerB)
    }

    @Test("a late check reports the timeouts it crossed before its own outcome")
    func lateCheck() {
        var agent = makeAgent()
        _ = agent.receiveStun(check(), from: peerA, now: 0)
        #expect(agent.receiveStun(check(), from: peerA, now: 12 * second).map(\.isSend) == [false, true, false])
        #expect(agent.receiveStun(check(), from: peerA, now: 43 * second) == [.consentExpired])
    }

    @Test("authenticated media on the selected path keeps a peer alive that only sends indications (libnice)")
    func mediaKeepsAlive() {
        var agent = makeAgent()
        _ = agent.receiveStun(check(useCandidate: true), from: peerA, now: 0)
        var reported: [IceAction] = []
        for time in stride(from: 1, through: 60, by: 1).map({ Int64($0) * second }) {
            reported += agent.mediaReceived(from: peerA, now: time)
            reported += agent.poll(now: time)
        }
        #expect(reported.isEmpty)
        #expect(agent.isConnected && agent.nextDeadline == 70 * second)
        // Media from elsewhere neither refreshes nor moves anything.
        #expect(agent.mediaReceived(from: peerB, now: 65 * second).isEmpty)
        #expect(agent.poll(now: 70 * second) == [.disconnected])
        #expect(agent.mediaReceived(from: peerB, now: 71 * second).isEmpty)
        #expect(agent.mediaReceived(from: peerA, now: 72 * second) == [.connected(peerA)])
        #expect(agent.poll(now: 102 * second) == [.consentExpired])
        #expect(agent.mediaReceived(from: peerA, now: 103 * second).isEmpty)
        #expect(agent.isExpired)
    }

    @Test("media before any valid check selects nothing")
    func mediaBeforeChecks() {
        var agent = makeAgent()
        #expect(agent.mediaReceived(from: peerA, now: 1).isEmpty)
        #expect(agent.selectedAddress == nil)
        #expect(agent.poll(now: 30 * second) == [.consentExpired])
    }

    @Test("real first checks of aioice 0.13 (aiortc) and libnice 0.1.21 (GStreamer 1.22) verify and are answered",
          arguments: [
              // Captured on the build machine against an answer with ufrag srvA1b2C / pwd ServerPwd0123456789abcde.
              ("xsG4", "000100482112a4424497f9a17b5adbeecdc3f1a30006000d73727641316232433a78734734000000002400046effffff802a000851ba772103a43a840008001452f211b32d55868586abbfce6e170e097fd3e2b380280004e65cab39"),
              // libnice pads USERNAME with spaces.
              ("3/R9eWhhDUjH5bfxSw34LME/yJe3IFZe", "000100642112a442bf662868a9657eb01421c2f2002400046e2000ff802a00086f55dae02e68bb150006002973727641316232433a332f52396557686844556a4835626678537733344c4d452f794a653349465a652020200008001486a2b9274a538ba7e522bc99bde6758b69cb45e080280004471a0f3c"),
          ])
    func realChecks(remoteUfrag: String, request: String) throws {
        var agent = IceLiteAgent(local: IceCredentials(ufrag: "srvA1b2C", pwd: "ServerPwd0123456789abcde"),
                                 remote: IceCredentials(ufrag: remoteUfrag, pwd: "unknown-to-the-test-xyz"), hmacSHA1: testHMACSHA1, now: 0)
        let source = TransportAddress.v4(192, 0, 2, 2, port: 40589)
        let actions = agent.receiveStun(bytes(hex: request), from: source, now: 1)
        let response = try sentResponse(actions)
        #expect(response.message.type == .bindingSuccess)
        #expect(response.message.xorMappedAddress == source)
        #expect(actions.last == .connected(source))
    }

    @Test("the consent timeout is configurable")
    func configurableTimeout() {
        var agent = makeAgent(configuration: .init(consentTimeout: 5 * second, disconnectedTimeout: 2 * second))
        _ = agent.receiveStun(check(), from: peerA, now: 0)
        #expect(agent.poll(now: 2 * second) == [.disconnected])
        #expect(agent.poll(now: 5 * second) == [.consentExpired])
    }

    @Test("SOFTWARE goes into responses when configured")
    func software() throws {
        var agent = makeAgent(configuration: .init(software: "stage-compositor"))
        let response = try sentResponse(agent.receiveStun(check(), from: peerA, now: 0))
        #expect(response.message.attributes.contains(.software("stage-compositor")))
    }

    @Test("random credentials come from the injected generator and are valid ice-chars")
    func randomCredentials() {
        var first = SeededGenerator(seed: 7), second = SeededGenerator(seed: 7)
        let a = IceCredentials.random(using: &first)
        #expect(a == IceCredentials.random(using: &second))
        #expect(a.ufrag.count == 8 && a.pwd.count == 24)
        #expect(a.isValidForSDP)
        #expect(a != IceCredentials.random(using: &first))
        var generator = SeededGenerator(seed: 9)
        let agent = IceLiteAgent(remote: remote, hmacSHA1: testHMACSHA1, now: 0, generator: &generator)
        #expect(agent.localCredentials.isValidForSDP)
    }
}

extension IceAction {
    var isSend: Bool {
        if case .send = self { return true }
        return false
    }
}

struct DatagramKindTests {
    @Test("RFC 7983 first-byte ranges")
    func ranges() {
        for byte in UInt8.min...UInt8.max {
            let expected: DatagramKind
            switch byte {
            case 0...3: expected = .stun
            case 20...63: expected = .dtls
            case 128...191: expected = .rtpOrRTCP
            default: expected = .drop
            }
            #expect(DatagramKind(firstByte: byte) == expected)
        }
        #expect(DatagramKind(classifying: []) == .drop)
        #expect(DatagramKind(classifying: RFC5769.request) == .stun)
        #expect(DatagramKind(classifying: [22, 254, 253]) == .dtls)
    }

    @Test("RTCP is told from RTP by the packet type byte")
    func rtcp() {
        #expect(DatagramKind.isRTCP([0x80, 200, 0, 6]))   // sender report
        #expect(DatagramKind.isRTCP([0x81, 205, 0, 3]))   // transport feedback
        #expect(!DatagramKind.isRTCP([0x80, 96, 0, 1]))   // RTP, payload type 96
        #expect(!DatagramKind.isRTCP([0x80, 0xE0, 0, 1])) // RTP, marker + payload type 96
        #expect(!DatagramKind.isRTCP([0x80]))
    }
}

struct TransportAddressTests {
    @Test("IPv4 and IPv6 text parses and prints in RFC 5952 form",
          arguments: [
              ("192.0.2.1", "192.0.2.1"),
              ("2001:DB8:0:0:0:0:0:1", "2001:db8::1"),
              ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
              ("::", "::"),
              ("::1", "::1"),
              ("fe80::fc:ff:fe00:1", "fe80::fc:ff:fe00:1"),
              ("2001:db8:1234:5678:11:2233:4455:6677", "2001:db8:1234:5678:11:2233:4455:6677"),
              ("::ffff:192.0.2.5", "::ffff:192.0.2.5"),
              ("1:0:0:2:0:0:0:3", "1:0:0:2::3"),
          ])
    func parseAndPrint(input: String, printed: String) {
        #expect(IPAddress(input)?.description == printed)
    }

    @Test("malformed addresses are rejected",
          arguments: ["", "1.2.3", "1.2.3.256", "1.2.3.4.5", "01234::", "1::2::3", ":1", "1:2:3:4:5:6:7:8:9", "fe80::1%eth0",
                      "host.local", "1.2.3.-4", "::g"])
    func rejects(input: String) {
        #expect(IPAddress(input) == nil)
    }

    @Test("transport addresses print with brackets for IPv6")
    func transportDescription() {
        #expect(TransportAddress.v4(10, 0, 0, 1, port: 80).description == "10.0.0.1:80")
        #expect(TransportAddress(ip: IPAddress("::1")!, port: 443).description == "[::1]:443")
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
    }
}
