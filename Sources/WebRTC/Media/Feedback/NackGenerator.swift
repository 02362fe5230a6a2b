// Finds gaps in the extended sequence numbers of one SSRC and asks for them again with
// generic NACKs, after libwebrtc's NackRequester and mediasoup's NackGenerator: each
// missing number is requested up to `maxRetries` times, spaced by the RTT (at least
// `minRetryInterval`), and given up when too old or when too many are missing at once —
// then the owner should ask for a keyframe instead, since the frames are lost anyway.
//
// The RTT is given (`updateRTT`) or measured here: from a NACK to the retransmission that
// answers it, for numbers asked for once only (Karn's rule: a second request makes the
// answer ambiguous), smoothed as TCP's retransmission timer is (RFC 6298: the smoothed RTT
// plus four times its mean deviation). Until the first measurement, `initialRTT`. A receiver
// whose reorder buffer waits a few RTTs then gets several requests in, not one or two.

public struct NackConfiguration: Sendable, Equatable {
    public var maxRetries: Int
    /// Floor of the spacing between two NACKs for one number, in µs.
    public var minRetryInterval: Int64
    /// How long a new gap is left for reordering before the first NACK, in µs.
    public var initialDelay: Int64
    /// A number missing longer than this (µs) is given up.
    public var maxAge: Int64
    /// A number this far behind the highest is given up.
    public var maxSequenceAge: Int64
    /// The RTT assumed before one is given or measured, in µs.
    public var initialRTT: Int64
    /// More missing numbers than this at once: give them all up and ask for a keyframe.
    public var maxMissing: Int

    public init(maxRetries: Int = 10, minRetryInterval: Int64 = 100_000, initialDelay: Int64 = 0,
                maxAge: Int64 = 1_000_000, maxSequenceAge: Int64 = 10_000, maxMissing: Int = 1000, initialRTT: Int64 = 0) {
        self.initialRTT = max(0, initialRTT)
        self.maxRetries = maxRetries
        self.minRetryInterval = minRetryInterval
        self.initialDelay = initialDelay
        self.maxAge = maxAge
        self.maxSequenceAge = maxSequenceAge
        self.maxMissing = maxMissing
    }
}

extension NackConfiguration {
    /// A publisher's video: the first request 10 ms after a gap shows (plain reordering
    /// settles first), then spaced by the RTT measured from retransmissions (100 ms until the
    /// first), at least 20 ms apart: on a short path the video reorder buffer's 150 ms then
    /// holds several requests, not two, so a lost request or a lost retransmission rarely
    /// costs a keyframe.
    public static let video = NackConfiguration(minRetryInterval: 20_000, initialDelay: 10_000, initialRTT: 100_000)
}

/// What `poll` asks the owner to do.
public struct NackOutput: Sendable, Equatable {
    /// Sequence numbers to put in a generic NACK now (see `NackPacker`), in order.
    public var nacks: [UInt16] = []
    /// Extended sequence numbers no longer waited for; the reorder buffer should skip them.
    public var gaveUp: [ClosedRange<Int64>] = []
    /// Losses could not be repaired by retransmission: request a keyframe.
    public var keyframeNeeded = false

    public init(nacks: [UInt16] = [], gaveUp: [ClosedRange<Int64>] = [], keyframeNeeded: Bool = false) {
        self.nacks = nacks
        self.gaveUp = gaveUp
        self.keyframeNeeded = keyframeNeeded
    }

    public var isEmpty: Bool { nacks.isEmpty && gaveUp.isEmpty && !keyframeNeeded }
}

/// How an arriving packet related to the missing list.
public enum NackArrival: Sendable, Equatable {
    /// The first packet, or in order (gaps behind it, if any, are now awaited).
    case advanced(newlyMissing: Int)
    /// It filled a gap; `wasRequested` when it was NACKed at least once.
    case filledGap(wasRequested: Bool)
    /// Behind the highest and not awaited: a duplicate, or given up already.
    case unexpected
}

public struct NackGenerator: Sendable {
    public let configuration: NackConfiguration

    public private(set) var sequenceNumbersRequested: Int64 = 0
    /// Gaps filled by a retransmission.
    public private(set) var recoveredByNack: Int64 = 0
    /// Gaps filled by the original arriving late (reordering), NACKed or not.
    public private(set) var lateArrivals: Int64 = 0
    public private(set) var givenUp: Int64 = 0
    /// Retransmissions of numbers not awaited (already here, or given up): wasted bandwidth.
    public private(set) var spuriousRetransmissions: Int64 = 0
    public private(set) var keyframesRequested: Int64 = 0

    private struct Missing: Sendable {
        let sequence: Int64
        let detectedAt: Int64
        var sentAt: Int64?
        var retries: Int
    }

    /// Ascending by sequence.
    private var missing: [Missing] = []
    private var highest: Int64?
    /// The retry spacing the RTT calls for (µs): given, or measured (smoothed + 4 × deviation).
    private var rtt: Int64
    /// The measured RTT, smoothed, and its mean deviation (µs); nil until the first measurement.
    private var smoothedRTT: Int64?
    private var rttDeviation: Int64 = 0
    /// RTT measurements taken from retransmissions.
    public private(set) var rttSamples: Int64 = 0
    private var gaveUp: [ClosedRange<Int64>] = []
    private var keyframeNeeded = false

    public init(configuration: NackConfiguration = NackConfiguration()) {
        self.configuration = configuration
        rtt = configuration.initialRTT
    }

    /// Numbers currently awaited.
    public var missingCount: Int { missing.count }
    public var missingSequences: [Int64] { missing.map(\.sequence) }

    /// The round-trip estimate spacing retries (floored at `minRetryInterval`).
    public mutating func updateRTT(_ rtt: Int64) { self.rtt = max(0, rtt) }

    /// The RTT measured from retransmissions, smoothed (µs); nil until one answered a NACK.
    public var measuredRTT: Int64? { smoothedRTT }

    /// One measurement: a NACK sent at `sentAt` answered at `now`. Times are our own clock's,
    /// but a late answer can still be absurd: anything over `maxAge` (when the number would
    /// have been given up) is ignored, so the arithmetic stays small.
    private mutating func measureRTT(sentAt: Int64, now: Int64) {
        let sample = now &- sentAt
        guard sample >= 0, sample <= configuration.maxAge else { return }
        rttSamples &+= 1
        if let smoothed = smoothedRTT {
            rttDeviation = (3 &* rttDeviation &+ abs(smoothed &- sample)) / 4
            smoothedRTT = (7 &* smoothed &+ sample) / 8
        } else {
            smoothedRTT = sample
            rttDeviation = sample / 2
        }
        rtt = (smoothedRTT ?? sample) &+ 4 &* rttDeviation
    }

    private var retryInterval: Int64 { max(configuration.minRetryInterval, rtt) }

    // MARK: Events

    /// A packet with extended sequence number `seq` (from `RTPReceiveStream.received`, so
    /// 16-bit wrap-around is already resolved) arrived at `now`.
    public mutating func received(seq sequence: Int64, now: Int64, isRetransmission: Bool = false) -> NackArrival {
        guard let last = highest else {
            highest = sequence
            return .advanced(newlyMissing: 0)
        }
        if sequence <= last {
            guard let index = position(of: sequence) else {
                if isRetransmission { spuriousRetransmissions += 1 }
                return .unexpected
            }
            let entry = missing.remove(at: index)
            if isRetransmission {
                recoveredByNack += 1
                if entry.retries == 1, let sentAt = entry.sentAt { measureRTT(sentAt: sentAt, now: now) }
            } else {
                lateArrivals += 1
            }
            return .filledGap(wasRequested: entry.retries > 0)
        }

        highest = sequence
        let gap = sequence - last - 1
        var added = 0
        if gap > 0 {
            if gap > Int64(configuration.maxMissing) {
                // Too much to repair: give everything up at once.
                giveUpAll()
                giveUp((last + 1)...(sequence - 1))
                keyframeNeeded = true
            } else {
                for lost in (last + 1)..<sequence {
                    missing.append(Missing(sequence: lost, detectedAt: now, sentAt: nil, retries: 0))
                }
                added = Int(gap)
                if missing.count > configuration.maxMissing {
                    giveUpAll()
                    keyframeNeeded = true
                    added = 0
                }
            }
        }
        // Numbers too far behind are not worth asking for any more.
        let oldest = sequence - configuration.maxSequenceAge
        let stale = missing.prefix { $0.sequence < oldest }.count
        if stale > 0 {
            for entry in missing.prefix(stale) { giveUp(entry.sequence...entry.sequence) }
            missing.removeFirst(stale)
            keyframeNeeded = true
        }
        return .advanced(newlyMissing: added)
    }

    /// A keyframe starting at `sequence` arrived: nothing before it is needed any more.
    /// Numbers dropped this way are reported as given up but ask for no keyframe.
    public mutating func keyframeReceived(startingAt sequence: Int64) {
        let older = missing.prefix { $0.sequence < sequence }.count
        for entry in missing.prefix(older) { giveUp(entry.sequence...entry.sequence) }
        missing.removeFirst(older)
    }

    /// The NACKs due at `now`, what was given up since the last poll, and whether a keyframe is needed.
    public mutating func poll(now: Int64) -> NackOutput {
        var output = NackOutput()
        var kept: [Missing] = []
        kept.reserveCapacity(missing.count)
        for var entry in missing {
            if now - entry.detectedAt >= configuration.maxAge {
                giveUp(entry.sequence...entry.sequence)
                keyframeNeeded = true
                continue
            }
            if dueTime(of: entry) <= now {
                if entry.retries >= configuration.maxRetries {
                    giveUp(entry.sequence...entry.sequence)
                    keyframeNeeded = true
                    continue
                }
                entry.retries += 1
                entry.sentAt = now
                output.nacks.append(UInt16(truncatingIfNeeded: entry.sequence))
            }
            kept.append(entry)
        }
        missing = kept
        sequenceNumbersRequested += Int64(output.nacks.count)
        output.gaveUp = gaveUp
        gaveUp = []
        if keyframeNeeded {
            output.keyframeNeeded = true
            keyframesRequested += 1
            keyframeNeeded = false
        }
        return output
    }

    /// When `poll` next has something to do; nil when nothing is awaited.
    public var nextDeadline: Int64? {
        if keyframeNeeded || !gaveUp.isEmpty { return Int64.min }
        return missing.map { min(dueTime(of: $0), $0.detectedAt + configuration.maxAge) }.min()
    }

    /// Forgets everything (the source restarted its sequence numbers).
    public mutating func reset() {
        missing = []
        highest = nil
        gaveUp = []
        keyframeNeeded = false
    }

    // MARK: Private

    private func dueTime(of entry: Missing) -> Int64 {
        if let sentAt = entry.sentAt { return sentAt + retryInterval }
        return entry.detectedAt + configuration.initialDelay
    }

    private func position(of sequence: Int64) -> Int? {
        var low = 0, high = missing.count
        while low < high {
            let middle = (low + high) / 2
            if missing[middle].sequence < sequence { low = middle + 1 } else { high = middle }
        }
        return low < missing.count && missing[low].sequence == sequence ? low : nil
    }

    private mutating func giveUpAll() {
        for entry in missing { giveUp(entry.sequence...entry.sequence) }
        missing = []
    }

    /// Records given-up numbers, merging adjacent ranges.
    private mutating func giveUp(_ range: ClosedRange<Int64>) {
        givenUp += range.upperBound - range.lowerBound + 1
        if let last = gaveUp.last, last.upperBound + 1 == range.lowerBound {
            gaveUp[gaveUp.count - 1] = last.lowerBound...range.upperBound
        } else {
            gaveUp.append(range)
        }
    }
}
