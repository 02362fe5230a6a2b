// When to ask a publisher for a keyframe: on joining (the first packet is rarely one), and
// whenever a loss cannot be repaired (a broken frame, NACK gave up); repeated every
// `repeatInterval` until a keyframe arrives, since the request or the keyframe itself may
// be lost. PLI is the default; FIR (RFC 5104) when that is what the publisher negotiated.

public enum KeyframeRequestMethod: Sendable, Equatable {
    case pictureLossIndication
    case fullIntraRequest
}

public struct KeyframeRequesterConfiguration: Sendable, Equatable {
    public var method: KeyframeRequestMethod
    /// Between two requests while no keyframe arrives, in µs.
    public var repeatInterval: Int64

    public init(method: KeyframeRequestMethod = .pictureLossIndication, repeatInterval: Int64 = 500_000) {
        self.method = method
        self.repeatInterval = repeatInterval
    }
}

public struct KeyframeRequester: Sendable, Equatable {
    public let mediaSSRC: UInt32
    /// Our SSRC, as the sender of the feedback.
    public let senderSSRC: UInt32
    public let configuration: KeyframeRequesterConfiguration

    public private(set) var pictureLossIndicationsSent: Int = 0
    public private(set) var fullIntraRequestsSent: Int = 0
    /// The FIR sequence number of the last FIR sent.
    public private(set) var firSequenceNumber: UInt8 = 0

    private enum State: Sendable, Equatable {
        /// No packet yet.
        case idle
        /// A keyframe is needed; `lastSentAt` is nil until the first request goes out.
        case requesting(lastSentAt: Int64?)
        /// Decodable; nothing to ask.
        case satisfied
    }

    private var state = State.idle

    public init(mediaSSRC: UInt32, senderSSRC: UInt32, configuration: KeyframeRequesterConfiguration = KeyframeRequesterConfiguration()) {
        self.mediaSSRC = mediaSSRC
        self.senderSSRC = senderSSRC
        self.configuration = configuration
    }

    /// True while a keyframe is being waited for.
    public var isRequesting: Bool {
        if case .requesting = state { return true }
        return false
    }

    // MARK: Events

    /// Any media packet of the stream. The first one starts the join request.
    public mutating func packetReceived() {
        if state == .idle { state = .requesting(lastSentAt: nil) }
    }

    /// A frame could not be completed, or NACK gave up: decoding is broken until a keyframe.
    public mutating func keyframeNeeded() {
        if case .requesting = state { return }
        state = .requesting(lastSentAt: nil)
    }

    /// A complete keyframe arrived.
    public mutating func keyframeReceived() {
        state = .satisfied
    }

    /// The request due at `now` (PLI or FIR), if any.
    public mutating func poll(now: Int64) -> RTCPPacket? {
        guard case .requesting(let lastSentAt) = state else { return nil }
        if let lastSentAt, now - lastSentAt < configuration.repeatInterval { return nil }
        state = .requesting(lastSentAt: now)
        switch configuration.method {
        case .pictureLossIndication:
            pictureLossIndicationsSent += 1
            return .pictureLossIndication(RTCPPictureLossIndication(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC))
        case .fullIntraRequest:
            // Every FIR gets a new number, repeats included: a sender may ignore a number it
            // has already served, and a repeat means that keyframe never reached us.
            firSequenceNumber &+= 1
            fullIntraRequestsSent += 1
            return .fullIntraRequest(RTCPFullIntraRequest(
                senderSSRC: senderSSRC, entries: [.init(ssrc: mediaSSRC, sequenceNumber: firSequenceNumber)]))
        }
    }

    public var nextDeadline: Int64? {
        guard case .requesting(let lastSentAt) = state else { return nil }
        guard let lastSentAt else { return Int64.min }
        return lastSentAt + configuration.repeatInterval
    }
}
