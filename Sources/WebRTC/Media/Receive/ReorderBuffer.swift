// Puts packets back in sequence order. A missing packet is waited for a bounded time
// (the wait, from the moment a later packet revealed the gap) or until the NACK generator
// gives it up, then reported lost and skipped; the buffer spans at most `capacity`
// sequence numbers, and a jump past that releases or loses the oldest to make room.
// Keyed by extended sequence numbers, so wrap-around is not its concern.
//
// The wait is fixed (`maxWait`), or, with a `minimumWait`, follows the reordering seen, the
// way a receiver without retransmissions (Opus) should: how long after its gap showed an
// out-of-order packet came (whether in time, or too late, from the gaps it skipped lately),
// the largest over the last one to two `reorderWindow`s, plus a quarter (at least 10 ms),
// within [minimumWait, maxWait]. It starts at `maxWait` until its first window has been
// seen. A path that reorders by 60 ms then loses no packet to a 40 ms wait, and a clean path
// does not hold the packets after a real loss longer than the minimum.

public struct ReorderBufferConfiguration: Sendable, Equatable {
    /// How long a gap is waited for at most, in µs. Video: about an RTT plus a retransmission
    /// or two.
    public var maxWait: Int64
    /// With a value, the wait follows the reordering seen, down to this (µs); nil: `maxWait`.
    public var minimumWait: Int64?
    /// Sequence numbers the buffer spans at most.
    public var capacity: Int
    /// How long (µs) the reordering seen is remembered: one to two of these.
    public var reorderWindow: Int64

    public init(maxWait: Int64 = 150_000, minimumWait: Int64? = nil, capacity: Int = 1024, reorderWindow: Int64 = 10_000_000) {
        precondition(maxWait >= 0 && capacity > 0 && reorderWindow > 0, "invalid reorder buffer configuration")
        precondition(minimumWait.map { $0 >= 0 && $0 <= maxWait } ?? true, "invalid reorder buffer configuration")
        self.maxWait = maxWait
        self.minimumWait = minimumWait
        self.capacity = capacity
        self.reorderWindow = reorderWindow
    }

    /// Opus: no retransmissions, so a lost packet is concealed rather than awaited long; the
    /// wait is what the path's reordering needs, 40 to 120 ms.
    public static let audio = ReorderBufferConfiguration(maxWait: 120_000, minimumWait: 40_000, capacity: 128)
}

/// Why sequence numbers were skipped.
public enum ReorderLossReason: Sendable, Equatable {
    /// Waited its time (`wait`).
    case timedOut
    /// Given up by the owner (NACK retries exhausted).
    case abandoned
    /// Pushed out by a packet more than `capacity` ahead.
    case overflow
}

public enum ReorderEvent<Element: Sendable>: Sendable {
    case packet(sequence: Int64, Element)
    case lost(ClosedRange<Int64>, reason: ReorderLossReason)
}

extension ReorderEvent: Equatable where Element: Equatable {}

public enum ReorderInsertResult: Sendable, Equatable {
    case accepted
    case duplicate
    /// In a gap already skipped (waited for and given up lately); dropped.
    case tooLate
}

public struct ReorderBuffer<Element: Sendable>: Sendable {
    public let configuration: ReorderBufferConfiguration

    public private(set) var packetsReleased: Int64 = 0
    public private(set) var packetsLost: Int64 = 0
    /// Packets that came in a gap already skipped (lately: the last `skippedMemory` gaps).
    public private(set) var packetsTooLate: Int64 = 0
    /// Packets already held or released (a retransmission of a packet that came after all),
    /// or behind every gap remembered.
    public private(set) var duplicates: Int64 = 0
    /// How long a gap is waited for now (µs).
    public private(set) var wait: Int64

    private enum Slot: Sendable {
        case empty
        case missing(since: Int64, abandoned: Bool)
        case present(Element, arrival: Int64)
    }

    private var slots: [Slot] = []
    /// The next sequence number to release; nil until the first packet.
    private var next: Int64?
    private var highest: Int64 = 0
    /// Events produced by `insert` (overflow), handed out by the next `poll`.
    private var pending: [ReorderEvent<Element>] = []
    /// The latest gaps skipped, with when they showed (a ring): a packet in one is too late
    /// rather than a duplicate, and says how long the wait should have been.
    private var skipped: [SkippedGap] = []
    private var skippedNext = 0
    static var skippedMemory: Int { 32 }
    /// The longest an out-of-order packet came after its gap showed, in the current and the
    /// previous window (nil: no window seen yet).
    private var currentMaximumDelay: Int64 = 0
    private var previousMaximumDelay: Int64?
    private var reorderWindowStart: Int64?

    private struct SkippedGap: Sendable {
        var sequences: ClosedRange<Int64>
        var since: Int64
        /// Waited for (timed out or abandoned), not pushed out by an overflow.
        var waited: Bool
    }

    public init(configuration: ReorderBufferConfiguration = ReorderBufferConfiguration()) {
        self.configuration = configuration
        wait = configuration.maxWait
    }

    /// Packets held, present or awaited.
    public var heldCount: Int {
        guard let next else { return 0 }
        return Int(highest - next + 1)
    }

    public mutating func insert(_ element: Element, sequence: Int64, now: Int64) -> ReorderInsertResult {
        if slots.isEmpty { slots = Array(repeating: .empty, count: configuration.capacity) }
        followWindows(now: now)
        guard let start = next else {
            next = sequence
            highest = sequence
            slots[index(sequence)] = .present(element, arrival: now)
            return .accepted
        }
        if sequence < start {
            guard let gap = skipped.first(where: { $0.sequences.contains(sequence) }) else {
                duplicates &+= 1
                return .duplicate
            }
            packetsTooLate &+= 1
            // A gap skipped long ago (a stray duplicate from the network) says nothing of now.
            if gap.waited, now &- gap.since < configuration.reorderWindow { observeDelay(now &- gap.since) }
            return .tooLate
        }
        if sequence <= highest {
            switch slots[index(sequence)] {
            case .present:
                duplicates &+= 1
                return .duplicate
            case .missing(let since, _):
                observeDelay(now &- since)
                slots[index(sequence)] = .present(element, arrival: now)
                return .accepted
            case .empty:
                slots[index(sequence)] = .present(element, arrival: now)
                return .accepted
            }
        }
        // Ahead of everything: make room, then mark the gap as awaited since now.
        let firstKept = sequence - Int64(configuration.capacity) + 1
        if firstKept > start { advance(to: firstKept, reason: .overflow) }
        var gap = max(highest + 1, next ?? sequence)
        while gap < sequence {
            slots[index(gap)] = .missing(since: now, abandoned: false)
            gap += 1
        }
        slots[index(sequence)] = .present(element, arrival: now)
        highest = sequence
        return .accepted
    }

    /// The owner gave up on `sequence` (NACK retries exhausted): skip it without waiting.
    public mutating func abandon(_ sequence: Int64) {
        guard let next, sequence >= next, sequence <= highest else { return }
        if case .missing(let since, _) = slots[index(sequence)] {
            slots[index(sequence)] = .missing(since: since, abandoned: true)
        }
    }

    /// Everything releasable at `now`, in order: packets, and lost ranges where gaps were skipped.
    public mutating func poll(now: Int64) -> [ReorderEvent<Element>] {
        followWindows(now: now)
        var events = pending
        pending = []
        guard var sequence = next else { return events }
        var lostStart: Int64?
        var lostSince: Int64 = 0
        var lostReason = ReorderLossReason.timedOut
        func flushLost(upTo end: Int64) {
            if let start = lostStart {
                events.append(.lost(start...end, reason: lostReason))
                packetsLost += end - start + 1
                remember(SkippedGap(sequences: start...end, since: lostSince, waited: true))
                lostStart = nil
            }
        }
        scan: while sequence <= highest {
            switch slots[index(sequence)] {
            case .present(let element, _):
                flushLost(upTo: sequence - 1)
                events.append(.packet(sequence: sequence, element))
                packetsReleased += 1
            case .missing(let since, let abandoned):
                guard abandoned || now - since >= wait else { break scan }
                let reason: ReorderLossReason = abandoned ? .abandoned : .timedOut
                if lostStart != nil, reason != lostReason || since != lostSince { flushLost(upTo: sequence - 1) }
                if lostStart == nil { lostStart = sequence; lostReason = reason; lostSince = since }
            case .empty:
                break scan  // cannot happen: every slot up to `highest` is present or missing
            }
            slots[index(sequence)] = .empty
            sequence += 1
        }
        flushLost(upTo: sequence - 1)
        next = sequence
        return events
    }

    /// When `poll` has something to do: now or in the past if a packet is releasable,
    /// the expiry of the awaited gap, or nil when empty.
    public var nextDeadline: Int64? {
        guard !pending.isEmpty || next != nil else { return nil }
        if !pending.isEmpty { return Int64.min }
        guard let next, next <= highest else { return nil }
        switch slots[index(next)] {
        case .present(_, let arrival): return arrival
        case .missing(let since, let abandoned): return abandoned ? since : since &+ wait
        case .empty: return nil
        }
    }

    /// Forgets everything (the source restarted its sequence numbers).
    public mutating func reset() {
        slots = []
        next = nil
        highest = 0
        pending = []
        skipped = []
        skippedNext = 0
    }

    // MARK: Private

    /// An out-of-order packet came `delay` µs after its gap showed.
    private mutating func observeDelay(_ delay: Int64) {
        currentMaximumDelay = max(currentMaximumDelay, delay)
        updateWait()
    }

    /// Starts a new reordering window when one has passed (two: nothing seen in the last).
    private mutating func followWindows(now: Int64) {
        guard configuration.minimumWait != nil else { return }
        guard let start = reorderWindowStart else {
            reorderWindowStart = now
            return
        }
        let elapsed = now &- start
        guard elapsed >= configuration.reorderWindow else { return }
        previousMaximumDelay = elapsed &- configuration.reorderWindow >= configuration.reorderWindow ? 0 : currentMaximumDelay
        currentMaximumDelay = 0
        reorderWindowStart = now
        updateWait()
    }

    /// The largest delay remembered plus a quarter (at least 10 ms), within the bounds; the
    /// maximum until a window has been seen.
    private mutating func updateWait() {
        guard let minimum = configuration.minimumWait, let previous = previousMaximumDelay else { return }
        // Delays are differences of our own clock's readings, below the window's length.
        let seen = min(max(previous, currentMaximumDelay), configuration.maxWait)
        wait = min(max(seen &+ max(seen / 4, 10_000), minimum), configuration.maxWait)
    }

    private mutating func remember(_ gap: SkippedGap) {
        if skipped.count < Self.skippedMemory {
            skipped.append(gap)
        } else {
            skipped[skippedNext] = gap
        }
        skippedNext = (skippedNext + 1) % Self.skippedMemory
    }

    private func index(_ sequence: Int64) -> Int {
        let capacity = Int64(configuration.capacity)
        return Int((sequence % capacity + capacity) % capacity)
    }

    /// Releases or loses everything before `target` at once (overflow).
    private mutating func advance(to target: Int64, reason: ReorderLossReason) {
        guard var sequence = next else { return }
        var lostStart: Int64?
        while sequence < target {
            if sequence <= highest, case .present(let element, _) = slots[index(sequence)] {
                if let start = lostStart {
                    pending.append(.lost(start...(sequence - 1), reason: reason))
                    packetsLost += sequence - start
                    remember(SkippedGap(sequences: start...(sequence - 1), since: 0, waited: false))
                    lostStart = nil
                }
                pending.append(.packet(sequence: sequence, element))
                packetsReleased += 1
            } else if lostStart == nil {
                lostStart = sequence
            }
            if sequence <= highest { slots[index(sequence)] = .empty }
            // Past `highest` nothing is held: the rest is one lost range.
            if sequence > highest {
                sequence = target
                break
            }
            sequence += 1
        }
        if let start = lostStart {
            pending.append(.lost(start...(target - 1), reason: reason))
            packetsLost += target - start
            remember(SkippedGap(sequences: start...(target - 1), since: 0, waited: false))
        }
        next = target
        highest = max(highest, target - 1)
    }
}
