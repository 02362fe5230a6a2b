// Every viewer of a composition shares its one encode, so every PLI and FIR, every viewer
// that joins and every viewer dropped to the next keyframe asks the same encoder, and each
// keyframe it makes costs every destination (RTMP, HLS) bitrate. The gate turns them into at
// most one encoder request per `minInterval`: the first at once, later ones when the interval
// has passed since the last, unless a keyframe left the encoder in between (a scheduled one,
// or the answer to the last request), which serves everyone waiting. A new viewer therefore
// has a keyframe within `minInterval` of joining.

public enum KeyframeRequestReason: Sendable, Equatable, CaseIterable {
    /// A viewer's PLI.
    case pictureLoss
    /// A viewer's FIR (a new request number, not a repeat).
    case fullIntraRequest
    /// A viewer joined and cannot decode until a keyframe.
    case newViewer
    /// A viewer fell behind and was dropped to the next keyframe (`ViewerPacer`).
    case viewerBehind
}

public struct KeyframeRequestGate: Sendable, Equatable {
    /// At most one encoder request per this many µs.
    public let minInterval: Int64

    public private(set) var pictureLossRequests: Int64 = 0
    public private(set) var fullIntraRequests: Int64 = 0
    public private(set) var newViewerRequests: Int64 = 0
    public private(set) var viewerBehindRequests: Int64 = 0
    /// Requests that found one already waiting, and went with it.
    public private(set) var requestsCoalesced: Int64 = 0
    /// Requests to the encoder (what `poll` said yes to).
    public private(set) var encoderRequests: Int64 = 0
    /// Waiting requests that a keyframe answered before they were passed on.
    public private(set) var satisfiedByKeyframe: Int64 = 0

    /// When the oldest unanswered request came; nil when none waits.
    private var pendingSince: Int64?
    private var lastRequestedAt: Int64?

    public init(minInterval: Int64 = 1_000_000) {
        self.minInterval = minInterval
    }

    public var requestsReceived: Int64 {
        pictureLossRequests + fullIntraRequests + newViewerRequests + viewerBehindRequests
    }

    /// Whether a request waits for the encoder.
    public var isPending: Bool { pendingSince != nil }

    // MARK: Events

    /// Someone needs a keyframe.
    public mutating func request(_ reason: KeyframeRequestReason, now: Int64) {
        switch reason {
        case .pictureLoss: pictureLossRequests += 1
        case .fullIntraRequest: fullIntraRequests += 1
        case .newViewer: newViewerRequests += 1
        case .viewerBehind: viewerBehindRequests += 1
        }
        if pendingSince == nil { pendingSince = now } else { requestsCoalesced += 1 }
    }

    /// A keyframe left the encoder (asked for or scheduled): whoever waited gets it.
    public mutating func keyframeProduced(now: Int64) {
        if pendingSince != nil { satisfiedByKeyframe += 1 }
        pendingSince = nil
    }

    /// Whether to ask the encoder for a keyframe now. Yes at most once per `minInterval`.
    public mutating func poll(now: Int64) -> Bool {
        guard let due = nextDeadline, now >= due else { return false }
        pendingSince = nil
        lastRequestedAt = now
        encoderRequests += 1
        return true
    }

    /// When `poll` will next say yes; nil while nothing waits.
    public var nextDeadline: Int64? {
        guard let pendingSince else { return nil }
        guard let lastRequestedAt else { return pendingSince }
        return max(pendingSince, lastRequestedAt &+ minInterval)
    }
}
