// 16-bit sequence numbers to a 64-bit extended sequence, after RFC 3550 appendix A.1:
// a jump of less than `maxDropout` ahead is accepted (a cycle is counted when it wraps),
// anything within `maxMisorder` behind is a late or duplicate packet, and any other jump is
// only believed when the next packet continues from it (the sender restarted).

/// What `SequenceUnwrapper.unwrap` made of a sequence number.
public enum SequenceUpdate: Sendable, Equatable {
    /// The packet extends the stream: `extended` is at or past the highest seen before.
    case advanced(extended: Int64)
    /// A late (reordered) or duplicate packet, behind the highest seen.
    case late(extended: Int64)
    /// The source restarted its numbering. `extended` still lies past everything before,
    /// so consumers keyed by extended sequence never go backwards; they should reset.
    case restarted(extended: Int64)
    /// A jump too far to believe from one packet; dropped until confirmed by the next.
    case rejected
    /// In probation (RFC 3550 MIN_SEQUENTIAL): not yet enough in-order packets.
    case probation

    /// The extended sequence number of an accepted packet.
    public var extended: Int64? {
        switch self {
        case .advanced(let value), .late(let value), .restarted(let value): value
        case .rejected, .probation: nil
        }
    }
}

public struct SequenceUnwrapper: Sendable, Equatable {
    public static let defaultMaxDropout: UInt16 = 3000
    /// RFC 3550 suggests 100; video at several Mbit/s reorders and retransmits further
    /// back than that, so this follows mediasoup's 1500.
    public static let defaultMaxMisorder: UInt16 = 1500

    public let maxDropout: UInt16
    public let maxMisorder: UInt16
    /// In-order packets needed before a new source is accepted; 1 accepts the first packet.
    /// WebRTC sources are signalled and SRTP-authenticated, so probation buys little there.
    public let minSequential: Int

    private var state: State

    private enum State: Sendable, Equatable {
        case empty
        case probation(last: UInt16, remaining: Int)
        /// `cycles` is the extended value of `maxSeq`'s cycle start (a multiple of 65536).
        case running(maxSeq: UInt16, cycles: Int64, badSeq: UInt16?)
    }

    public init(maxDropout: UInt16 = defaultMaxDropout, maxMisorder: UInt16 = defaultMaxMisorder, minSequential: Int = 1) {
        self.maxDropout = maxDropout
        self.maxMisorder = maxMisorder
        self.minSequential = max(1, minSequential)
        self.state = .empty
    }

    /// The highest extended sequence number accepted so far.
    public var highestExtended: Int64? {
        if case .running(let maxSeq, let cycles, _) = state { return cycles + Int64(maxSeq) }
        return nil
    }

    /// The extended value nearest to the highest, without touching the state: for
    /// retransmissions, which may come back from any distance and must never count as a
    /// jump or confirm a restart. Nil before the first accepted packet.
    public func nearest(_ seq: UInt16) -> Int64? {
        guard let highest = highestExtended else { return nil }
        return highest + Int64(Int16(bitPattern: seq &- UInt16(truncatingIfNeeded: highest)))
    }

    public mutating func unwrap(_ seq: UInt16) -> SequenceUpdate {
        switch state {
        case .empty:
            if minSequential <= 1 {
                state = .running(maxSeq: seq, cycles: 0, badSeq: nil)
                return .advanced(extended: Int64(seq))
            }
            state = .probation(last: seq, remaining: minSequential - 1)
            return .probation

        case .probation(let last, let remaining):
            guard seq == last &+ 1 else {
                state = .probation(last: seq, remaining: minSequential - 1)
                return .probation
            }
            if remaining > 1 {
                state = .probation(last: seq, remaining: remaining - 1)
                return .probation
            }
            state = .running(maxSeq: seq, cycles: 0, badSeq: nil)
            return .advanced(extended: Int64(seq))

        case .running(let maxSeq, let cycles, let badSeq):
            let delta = seq &- maxSeq
            if delta == 0 { return .late(extended: cycles + Int64(seq)) }  // duplicate of the highest
            if delta < maxDropout {
                // In order, with a permissible gap; a smaller value means the 16 bits wrapped.
                let newCycles = seq < maxSeq ? cycles + 65536 : cycles
                state = .running(maxSeq: seq, cycles: newCycles, badSeq: nil)
                return .advanced(extended: newCycles + Int64(seq))
            }
            if delta <= UInt16.max - maxMisorder {
                // A very large jump: believe it only when the next packet follows it.
                if let badSeq, seq == badSeq {
                    // One cycle on: past everything before, and still `seq` modulo 65536.
                    let restartCycles = cycles + 65536
                    state = .running(maxSeq: seq, cycles: restartCycles, badSeq: nil)
                    return .restarted(extended: restartCycles + Int64(seq))
                }
                state = .running(maxSeq: maxSeq, cycles: cycles, badSeq: seq &+ 1)
                return .rejected
            }
            // Within `maxMisorder` behind: late or duplicate; it belongs to the previous cycle
            // when its value is above the highest.
            let extended = cycles + Int64(seq) - (seq > maxSeq ? 65536 : 0)
            return .late(extended: extended)
        }
    }
}
