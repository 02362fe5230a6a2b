// The server side of ICE as a lite agent (RFC 8445 §2.5): we never send checks, we answer
// the peer's Binding requests, use the address the peer nominates, and track consent
// freshness (RFC 7675) from the checks the peer keeps sending. One agent per session.
//
//   CHECKING ─valid check─► CONNECTED ◄─valid check (or SRTP on the selected path)─┐
//      │                      │ selected path silent for disconnectedTimeout        │
//      │                      ▼                                                     │
//      │                   DISCONNECTED ────────────────────────────────────────────┘
//      └────────┬─────────────┘
//               ▼ no valid check (nor selected-path SRTP) for consentTimeout
//            EXPIRED (terminal: stop sending, tear the session down)
//
// The owner (the UDP shell) sends `.send` datagrams, points outgoing media and RTCP at the
// address of the latest `.connected`, reports authenticated SRTP with `mediaReceived`, calls
// `poll(now:)` at `nextDeadline`, and ends the session on `.consentExpired`.

/// What the owner does next, in order.
public enum IceAction: Equatable, Sendable {
    /// Write this datagram to that address (a Binding response).
    case send([UInt8], to: TransportAddress)
    /// Send to this address from now on: the first usable path, a newly nominated one (the
    /// peer moved, e.g. NAT rebinding), or the path coming back after `.disconnected`.
    case connected(TransportAddress)
    /// No valid check arrived on the selected path for the disconnected timeout. Media may
    /// still flow; a later check reconnects.
    case disconnected
    /// No valid check for the consent timeout: stop sending and end the session (RFC 7675 §5.1).
    case consentExpired
    /// A check was refused or dropped; for logs. The error says which response, if any, went back.
    case checkFailed(IceError, from: TransportAddress)
}

/// Why a Binding request was not accepted.
public enum IceError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not decodable as STUN; dropped without an answer.
    case malformed(STUNError)
    /// FINGERPRINT present but wrong: not really STUN, dropped without an answer.
    case badFingerprint
    /// A request for a method other than Binding; dropped without an answer.
    case unsupportedMethod(UInt16)
    /// No USERNAME: answered 400.
    case missingUsername
    /// No MESSAGE-INTEGRITY: answered 400.
    case missingIntegrity
    /// USERNAME is not "ourUfrag:theirUfrag": answered 401.
    case unknownUsername(String)
    /// MESSAGE-INTEGRITY does not verify with our password: answered 401.
    case badIntegrity
    /// Comprehension-required attributes we do not know: answered 420 with UNKNOWN-ATTRIBUTES.
    case unknownAttributes([UInt16])
    /// The peer claims the controlled role, but a lite agent is always controlled: answered 487.
    case roleConflict

    public var description: String {
        switch self {
        case .malformed(let error): return "dropped malformed STUN: \(error)"
        case .badFingerprint: return "dropped STUN with a bad FINGERPRINT"
        case .unsupportedMethod(let method): return "dropped STUN request for method 0x\(String(method, radix: 16))"
        case .missingUsername: return "400: Binding request without USERNAME"
        case .missingIntegrity: return "400: Binding request without MESSAGE-INTEGRITY"
        case .unknownUsername(let name): return "401: unknown USERNAME \"\(name)\""
        case .badIntegrity: return "401: MESSAGE-INTEGRITY does not match our password"
        case .unknownAttributes(let types):
            return "420: unknown attributes " + types.map { "0x" + String($0, radix: 16) }.joined(separator: ",")
        case .roleConflict: return "487: peer is ICE-CONTROLLED too"
        }
    }
}

public struct IceLiteAgent: Sendable {
    /// Timeouts in microseconds.
    public struct Configuration: Equatable, Sendable {
        /// RFC 7675 §5.1: consent expires 30 s after the last valid check (or `mediaReceived`).
        public var consentTimeout: Int64
        /// Silence on the selected path before `.disconnected`. Browsers check every 2.5–6 s,
        /// so 10 s means at least one check was lost in a row of them.
        public var disconnectedTimeout: Int64
        /// SOFTWARE in our responses; nil leaves it out.
        public var software: String?

        public init(consentTimeout: Int64 = 30_000_000, disconnectedTimeout: Int64 = 10_000_000, software: String? = nil) {
            self.consentTimeout = consentTimeout
            self.disconnectedTimeout = disconnectedTimeout
            self.software = software
        }
    }

    public let localCredentials: IceCredentials
    public let remoteCredentials: IceCredentials
    public let configuration: Configuration
    private let hmacSHA1: HMACSHA1
    private var state: State
    /// Time of the last valid check from any address: consent (the peer still wants our traffic).
    private var lastValidCheck: Int64

    /// The path we send on, once there is one.
    private struct Selection {
        var address: TransportAddress
        /// The peer sent USE-CANDIDATE on this address.
        var nominated: Bool
        /// PRIORITY of the nominating check, to pick the best of several aggressive nominations.
        var priority: UInt32?
        var lastCheck: Int64
    }

    private enum State {
        case checking
        case connected(Selection)
        case disconnected(Selection)
        case expired
    }

    /// `local` goes into our SDP answer, `remote` comes from the offer; `now` starts the
    /// consent clock, so a peer that never checks expires too.
    public init(local: IceCredentials, remote: IceCredentials, hmacSHA1: @escaping HMACSHA1,
                configuration: Configuration = Configuration(), now: Int64) {
        self.localCredentials = local
        self.remoteCredentials = remote
        self.hmacSHA1 = hmacSHA1
        self.configuration = configuration
        self.state = .checking
        self.lastValidCheck = now
    }

    /// Same, with fresh local credentials drawn from `generator`.
    public init(remote: IceCredentials, hmacSHA1: @escaping HMACSHA1, configuration: Configuration = Configuration(),
                now: Int64, generator: inout some RandomNumberGenerator) {
        self.init(local: .random(using: &generator), remote: remote, hmacSHA1: hmacSHA1, configuration: configuration, now: now)
    }

    /// Where media and RTCP go now; nil before the first valid check and after expiry.
    public var selectedAddress: TransportAddress? {
        switch state {
        case .connected(let selection), .disconnected(let selection): return selection.address
        case .checking, .expired: return nil
        }
    }

    public var isConnected: Bool {
        if case .connected = state { return true }
        return false
    }

    public var isExpired: Bool {
        if case .expired = state { return true }
        return false
    }

    /// When `poll(now:)` next has something to report; nil once consent expired.
    public var nextDeadline: Int64? {
        let consentDeadline = lastValidCheck + configuration.consentTimeout
        switch state {
        case .checking, .disconnected: return consentDeadline
        case .connected(let selection): return min(consentDeadline, selection.lastCheck + configuration.disconnectedTimeout)
        case .expired: return nil
        }
    }

    /// Applies the timeouts.
    public mutating func poll(now: Int64) -> [IceAction] {
        if case .expired = state { return [] }
        if now - lastValidCheck >= configuration.consentTimeout {
            state = .expired
            return [.consentExpired]
        }
        if case .connected(let selection) = state, now - selection.lastCheck >= configuration.disconnectedTimeout {
            state = .disconnected(selection)
            return [.disconnected]
        }
        return []
    }

    /// Handles one STUN datagram (see `DatagramKind`) from `source`.
    public mutating func receiveStun(_ bytes: [UInt8], from source: TransportAddress, now: Int64) -> [IceAction] {
        // Timeouts first, so the outcome does not depend on how often the owner polls.
        var actions = poll(now: now)
        if case .expired = state { return actions }

        let request: STUNMessage
        do {
            request = try STUNMessage.decode(bytes)
        } catch {
            return actions + [.checkFailed(.malformed(error), from: source)]
        }
        if STUN.checkFingerprint(bytes) == .invalid {
            return actions + [.checkFailed(.badFingerprint, from: source)]
        }
        // Indications (keepalives) and responses (we never send requests) need nothing.
        guard request.type.messageClass == .request else { return actions }
        guard request.type.method == STUNMessageType.bindingMethod else {
            return actions + [.checkFailed(.unsupportedMethod(request.type.method), from: source)]
        }

        let outcome = authenticate(request, bytes: bytes)
        if case .refused(let error, let response) = outcome {
            actions.append(.send(response, to: source))
            actions.append(.checkFailed(error, from: source))
            return actions
        }

        actions.append(.send(successResponse(to: request, from: source), to: source))
        actions += select(source, nominated: request.useCandidate, priority: request.priority, now: now)
        return actions
    }

    /// SRTP or SRTCP that passed authentication arrived from `source`. From the selected address
    /// it keeps consent and the path fresh like a valid check: libnice as GStreamer 1.22 webrtcbin
    /// drives it sends no consent checks once nominated, only unauthenticated Binding indications
    /// every 25 s, so without this such publishers would expire after 30 s while media flows.
    /// The SRTP authentication tag is what makes this safe; call it for nothing less. Traffic
    /// from any other address changes nothing (only checks move the selection).
    public mutating func mediaReceived(from source: TransportAddress, now: Int64) -> [IceAction] {
        var actions = poll(now: now)
        switch state {
        case .connected(var selection) where selection.address == source:
            selection.lastCheck = now
            lastValidCheck = now
            state = .connected(selection)
        case .disconnected(var selection) where selection.address == source:
            selection.lastCheck = now
            lastValidCheck = now
            state = .connected(selection)
            actions.append(.connected(source))
        default:
            break
        }
        return actions
    }

    // MARK: - Checks

    private enum Outcome {
        case accepted
        case refused(IceError, response: [UInt8])
    }

    /// RFC 8489 §9.1.3 order: credentials present, username known, integrity; then unknown
    /// comprehension-required attributes (§6.3.1) and the ICE role (RFC 8445 §7.3.1.1).
    /// PRIORITY and ICE-CONTROLLING are not required: some peers leave them out.
    private func authenticate(_ request: STUNMessage, bytes: [UInt8]) -> Outcome {
        guard let username = request.username else {
            return .refused(.missingUsername, response: errorResponse(to: request, .badRequest, authenticated: false))
        }
        guard request.messageIntegrity != nil else {
            return .refused(.missingIntegrity, response: errorResponse(to: request, .badRequest, authenticated: false))
        }
        guard username == "\(localCredentials.ufrag):\(remoteCredentials.ufrag)" else {
            return .refused(.unknownUsername(username), response: errorResponse(to: request, .unauthorized, authenticated: false))
        }
        guard STUN.checkIntegrity(bytes, key: Array(localCredentials.pwd.utf8), hmacSHA1: hmacSHA1) == .valid else {
            return .refused(.badIntegrity, response: errorResponse(to: request, .unauthorized, authenticated: false))
        }
        let unknown = request.unknownComprehensionRequired
        if !unknown.isEmpty {
            return .refused(.unknownAttributes(unknown),
                            response: errorResponse(to: request, .unknownAttribute, authenticated: true, extra: [.unknownAttributes(unknown)]))
        }
        if request.iceControlled != nil {
            return .refused(.roleConflict, response: errorResponse(to: request, .roleConflict, authenticated: true))
        }
        return .accepted
    }

    /// Moves the selection and consent after a valid check.
    ///
    /// Before any nomination the first address with a valid check carries media, so media can
    /// flow as soon as DTLS is up. USE-CANDIDATE from a new address moves the selection (regular
    /// nomination, renomination, or the peer's NAT rebinding) unless the current nominated path
    /// has a higher PRIORITY: an aggressive-nominating peer puts USE-CANDIDATE on every check, and
    /// the highest-priority nominated pair is the one it ends up using (RFC 8445 §8.1.1).
    private mutating func select(_ source: TransportAddress, nominated: Bool, priority: UInt32?, now: Int64) -> [IceAction] {
        lastValidCheck = now
        switch state {
        case .expired:
            return []
        case .checking:
            state = .connected(Selection(address: source, nominated: nominated, priority: nominated ? priority : nil, lastCheck: now))
            return [.connected(source)]
        case .disconnected(var selection):
            // Any valid check revives the session; from a new address it also moves it there.
            if selection.address != source {
                selection = Selection(address: source, nominated: nominated, priority: nominated ? priority : nil, lastCheck: now)
            } else {
                selection.lastCheck = now
                if nominated { selection.nominated = true; selection.priority = priority }
            }
            state = .connected(selection)
            return [.connected(source)]
        case .connected(var selection):
            if selection.address == source {
                selection.lastCheck = now
                if nominated { selection.nominated = true; selection.priority = priority }
                state = .connected(selection)
                return []
            }
            guard nominated else { return [] }
            if selection.nominated, let current = selection.priority, let offered = priority, offered < current {
                return []
            }
            state = .connected(Selection(address: source, nominated: true, priority: priority, lastCheck: now))
            return [.connected(source)]
        }
    }

    // MARK: - Responses

    private func successResponse(to request: STUNMessage, from source: TransportAddress) -> [UInt8] {
        var attributes: [STUNAttribute] = [.xorMappedAddress(source)]
        if let software = configuration.software { attributes.append(.software(software)) }
        let response = STUNMessage(type: .bindingSuccess, transactionID: request.transactionID, attributes: attributes)
        return response.encode(integrity: integrityKey, fingerprint: true)
    }

    /// 400 and 401 go back without MESSAGE-INTEGRITY: the request did not prove it knows our
    /// password, so we have nothing to key a response with that the sender could check.
    private func errorResponse(to request: STUNMessage, _ error: STUNErrorCode, authenticated: Bool,
                               extra: [STUNAttribute] = []) -> [UInt8] {
        var attributes: [STUNAttribute] = [.errorCode(error)] + extra
        if let software = configuration.software { attributes.append(.software(software)) }
        let response = STUNMessage(type: .bindingError, transactionID: request.transactionID, attributes: attributes)
        return response.encode(integrity: authenticated ? integrityKey : nil, fingerprint: true)
    }

    private var integrityKey: STUNIntegrityKey {
        STUNIntegrityKey(key: Array(localCredentials.pwd.utf8), hmacSHA1: hmacSHA1)
    }
}
