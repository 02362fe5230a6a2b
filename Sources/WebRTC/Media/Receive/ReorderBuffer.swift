// Puts packets back in sequence order. A missing packet is waited for a bounded time
// (`maxWait` from the moment a later packet revealed the gap) or until the NACK generator
// gives it up, then reported lost and skipped; the buffer spans at most `capacity`
// sequence numbers, and a jump past that releases or loses the oldest to make room.
// Keyed by extended sequence numbers, so wrap-around is not its concern.

public struct ReorderBufferConfiguration: Sendable, Equatable {
    /// How long a gap is waited for, in µs. Video: about an RTT plus a retransmission or two.
    public var maxWait: Int64
    /// Sequence numbers the buffer spans at most.
    public var capacity: Int

    public init(maxWait: Int64 = 150_000, capacity: Int = 1024) {
        precondition(maxWait >= 0 && capacity > 0, "invalid reorder buffer configuration")
        self.maxWait = maxWait
        self.capacity = capacity
    }

    /// Opus: a short wait; a lost packet is concealed rather than awaited.
    public static let audio = ReorderBufferConfiguration(maxWait: 40_000, capacity: 128)
}

/// Why sequence numbers were skipped.
public enum ReorderLossReason: Sendable, Equatable {
    /// Waited `maxWait`.
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
    /// Behind what was already released or skipped; dropped.
    case tooLate
}

public struct ReorderBuffer<Element: Sendable>: Sendable {
    public let configuration: ReorderBufferConfiguration

    public private(set) var packetsReleased: Int64 = 0
    public private(set) var packetsLost: Int64 = 0
    public private(set) var packetsTooLate: Int64 = 0
    public private(set) var duplicates: Int64 = 0

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

    public init(configuration: ReorderBufferConfiguration = ReorderBufferConfiguration()) {
        self.configuration = configuration
    }

    /// Packets held, present or awaited.
    public var heldCount: Int {
        guard let next else { return 0 }
        return Int(highest - next + 1)
    }

    public mutating func insert(_ element: Element, sequence: Int64, now: Int64) -> ReorderInsertResult {
        if slots.isEmpty { slots = Array(repeating: .empty, count: configuration.capacity) }
        guard let start = next else {
            next = sequence
            highest = sequence
            slots[index(sequence)] = .present(element, arrival: now)
            return .accepted
        }
        if sequence < start {
            packetsTooLate += 1
            return .tooLate
        }
        if sequence <= highest {
            switch slots[index(sequence)] {
            case .present:
                duplicates += 1
                return .duplicate
            case .missing, .empty:
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
        var events = pending
        pending = []
        guard var sequence = next else { return events }
        var lostStart: Int64?
        var lostReason = ReorderLossReason.timedOut
        func flushLost(upTo end: Int64) {
            if let start = lostStart {
                events.append(.lost(start...end, reason: lostReason))
                packetsLost += end - start + 1
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
                guard abandoned || now - since >= configuration.maxWait else { break scan }
                let reason: ReorderLossReason = abandoned ? .abandoned : .timedOut
                if lostStart != nil, reason != lostReason { flushLost(upTo: sequence - 1) }
                if lostStart == nil { lostStart = sequence; lostReason = reason }
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
        case .missing(let since, let abandoned): return abandoned ? since : since + configuration.maxWait
        case .empty: return nil
        }
    }

    /// Forgets everything (the source restarted its sequence numbers).
    public mutating func reset() {
        slots = []
        next = nil
        highest = 0
        pending = []
    }

    // MARK: Private

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
        }
        next = target
        highest = max(highest, target - 1)
    }
}
