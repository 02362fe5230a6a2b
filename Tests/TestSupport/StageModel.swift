// An independent model of a stage, the oracle of the stage-sequence property tests: from a
// timed sequence of what publishers do, what the composite must show at each tick (who has a
// tile, in which order, picture or camera-off) and whose audio must be mixed. It shares no
// code with the compositor: ordering, featured and PiP rules are written again here from the
// IVS documentation, so a fault in either shows as a disagreement.

/// What one participant brings when it joins: the attributes layouts read.
public struct ParticipantTraits: Equatable, Sendable, CustomStringConvertible {
    public var featured: Bool
    public var pip: Bool
    /// `order` attribute: a number, a word, or absent.
    public var order: String?

    public init(featured: Bool = false, pip: Bool = false, order: String? = nil) {
        self.featured = featured
        self.pip = pip
        self.order = order
    }

    public var attributes: [String: String] {
        var attributes: [String: String] = [:]
        if featured { attributes["featured"] = "true" }
        if pip { attributes["pip"] = "true" }
        if let order { attributes["order"] = order }
        return attributes
    }

    public var description: String {
        var parts: [String] = []
        if featured { parts.append("featured") }
        if pip { parts.append("pip") }
        if let order { parts.append("order=\(order)") }
        return "{\(parts.joined(separator: ","))}"
    }
}

/// One thing a publisher does.
public enum StageStep: Equatable, Sendable, CustomStringConvertible {
    /// Joins and publishes (a reconnect when it was on the stage before: same key or token).
    case join(Int, ParticipantTraits)
    /// Unpublishes and leaves cleanly.
    case leave(Int)
    /// The connection drops: media stops at once, the server notices `detectedAfterMs` later.
    case kill(Int, detectedAfterMs: Int64)
    case stopVideo(Int)
    case startVideo(Int)
    case mute(Int)
    case unmute(Int)
    /// The publisher switches to another picture size (new sequence header, then a keyframe).
    case resize(Int)
    /// A producer changes the composition's layout (UpdateComposition, a cut): the next
    /// frame is laid out the new way. Not a participant's step (`participant` is -1).
    case relayout(ModelLayout)
    /// A connected participant's attributes change (UpdateParticipant or a token exchange):
    /// the next frame lays it out by them.
    case setTraits(Int, ParticipantTraits)

    public var participant: Int {
        switch self {
        case .join(let p, _), .leave(let p), .kill(let p, _), .stopVideo(let p), .startVideo(let p), .mute(let p),
             .unmute(let p), .resize(let p), .setTraits(let p, _): p
        case .relayout: -1
        }
    }

    public var description: String {
        switch self {
        case .join(let p, let traits): "join p\(p) \(traits)"
        case .leave(let p): "leave p\(p)"
        case .kill(let p, let after): "kill p\(p) (noticed after \(after) ms)"
        case .stopVideo(let p): "stop video p\(p)"
        case .startVideo(let p): "start video p\(p)"
        case .mute(let p): "mute p\(p)"
        case .unmute(let p): "unmute p\(p)"
        case .resize(let p): "resize p\(p)"
        case .relayout(let layout): "relayout \(layout)"
        case .setTraits(let p, let traits): "attributes p\(p) \(traits)"
        }
    }
}

public struct TimedStageStep: Equatable, Sendable, CustomStringConvertible {
    public var atMs: Int64
    public var step: StageStep

    public init(atMs: Int64, step: StageStep) {
        self.atMs = atMs
        self.step = step
    }

    public var description: String { "@\(atMs) ms \(step)" }
}

/// The layout the composite uses (the model's own reading of the IVS rules).
public struct ModelLayout: Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Sendable { case grid, pip }
    public var kind: Kind
    public var featuredAttribute: Bool
    public var orderAttribute: Bool
    public var omitStoppedVideo: Bool

    public init(kind: Kind, featuredAttribute: Bool, orderAttribute: Bool, omitStoppedVideo: Bool) {
        self.kind = kind
        self.featuredAttribute = featuredAttribute
        self.orderAttribute = orderAttribute
        self.omitStoppedVideo = omitStoppedVideo
    }

    public var description: String {
        "\(kind == .grid ? "grid" : "pip") featured=\(featuredAttribute) order=\(orderAttribute) omitStoppedVideo=\(omitStoppedVideo)"
    }
}

/// How a transport shows what publishers do, in ms of stage time.
public struct StageModelTiming: Sendable {
    /// From the first frame sent (join, video start) to its picture on screen.
    public var pictureDelayMs: Int64
    /// From the last frame sent to the camera-off tile (live: latency + videoStoppedAfter;
    /// a recorded timeline says `videoStopped` and the tile changes at once).
    public var cameraOffAfterMs: Int64
    /// Ticks within this of a participant's change may show either side of it.
    public var settleMs: Int64
    /// Whether the transport can say "muted" (recorded timelines can; RTMP cannot).
    public var supportsMute: Bool
    public var supportsKill: Bool
    public var supportsResize: Bool
    /// Whether a participant may rejoin with other attributes.
    public var supportsNewTraits: Bool
    /// Whether the layout and attributes may change while the stage runs (`relayout`,
    /// `setTraits`).
    public var supportsDirection: Bool
    /// From a leave to the participant's tile and voice going (live: the latency, while what
    /// it sent last plays out; a recorded timeline's unpublish acts at once).
    public var leaveShownAfterMs: Int64
    /// A frame at tick time t stands for the instant t + this (the compositor's frame lead:
    /// pictures, joins and leaves show on the tick nearest them).
    public var frameLeadMs: Int64

    public init(pictureDelayMs: Int64, cameraOffAfterMs: Int64, settleMs: Int64, supportsMute: Bool, supportsKill: Bool,
                supportsResize: Bool, supportsNewTraits: Bool, supportsDirection: Bool = false, leaveShownAfterMs: Int64 = 0,
                frameLeadMs: Int64 = 0) {
        self.supportsDirection = supportsDirection
        self.leaveShownAfterMs = leaveShownAfterMs
        self.frameLeadMs = frameLeadMs
        self.pictureDelayMs = pictureDelayMs
        self.cameraOffAfterMs = cameraOffAfterMs
        self.settleMs = settleMs
        self.supportsMute = supportsMute
        self.supportsKill = supportsKill
        self.supportsResize = supportsResize
        self.supportsNewTraits = supportsNewTraits
    }
}

/// What the composite shows at one tick (from the model, or observed).
public struct StageView: Equatable, Sendable, CustomStringConvertible {
    public struct Tile: Equatable, Sendable {
        public var participant: String
        public var picture: Bool

        public init(participant: String, picture: Bool) {
            self.participant = participant
            self.picture = picture
        }
    }

    /// In layout order (the order the layout engine lists tiles).
    public var tiles: [Tile]
    /// Whose audio is mixed.
    public var audible: Set<String>

    public init(tiles: [Tile], audible: Set<String>) {
        self.tiles = tiles
        self.audible = audible
    }

    public var description: String {
        "tiles [" + tiles.map { "\($0.participant)\($0.picture ? "" : "(off)")" }.joined(separator: " ") + "] audio "
            + audible.sorted().joined(separator: ",")
    }
}

public struct StageModel: Sendable {
    public let timing: StageModelTiming
    /// The layout at the start.
    public let layout: ModelLayout
    /// Layout changes (`relayout`), in time order: each is in force from its instant on.
    private var relayouts: [(atMs: Int64, layout: ModelLayout)] = []

    /// Each participant's state as the model replays the steps.
    struct Participant {
        var connected = false
        /// Killed: still on the stage until the server notices.
        var leavesAtMs: Int64?
        var sendingVideo = false
        var muted = false
        var traits = ParticipantTraits()
        var arrival: Int?
        /// When video was last started (join or start) and stopped (stop, kill).
        var videoStartedAtMs: Int64 = 0
        var videoStoppedAtMs: Int64?
        /// From when the connection has a picture to show (its first frame, once due); the
        /// last picture stays (frozen) while video is stopped, until camera-off.
        var pictureFromMs: Int64?
        /// `pictureFromMs` before the latest video start (a start stopped in the same instant
        /// sent no frame).
        var pictureFromBeforeStartMs: Int64?
        /// Times around which the participant's view may be on either side.
        var changes: [Int64] = []
    }

    /// The steps that took effect (others were invalid where they came: a leave of someone
    /// absent, a mute on a transport without mute ...), in order.
    public private(set) var applied: [TimedStageStep] = []
    private var participants: [Int: Participant] = [:]
    private var nextArrival = 0

    public init(timing: StageModelTiming, layout: ModelLayout) {
        self.timing = timing
        self.layout = layout
    }

    public static func id(_ participant: Int) -> String { "p\(participant)" }

    /// Applies the steps in time order (ties in the given order); returns the model.
    public static func replay(_ steps: [TimedStageStep], timing: StageModelTiming, layout: ModelLayout) -> StageModel {
        var model = StageModel(timing: timing, layout: layout)
        for step in steps.enumerated().sorted(by: { ($0.element.atMs, $0.offset) < ($1.element.atMs, $1.offset) }) {
            model.apply(step.element)
        }
        return model
    }

    /// Whether the step is valid now; if so its effects are recorded.
    @discardableResult
    public mutating func apply(_ timed: TimedStageStep) -> Bool {
        let t = timed.atMs
        if case .relayout(let layout) = timed.step {
            guard timing.supportsDirection else { return false }
            relayouts.append((t, layout))
            applied.append(timed)
            return true
        }
        let index = timed.step.participant
        var p = participants[index] ?? Participant()
        // A killed participant that the server has noticed by now is gone.
        if let leaves = p.leavesAtMs, leaves <= t {
            p.connected = false
            p.leavesAtMs = nil
        }
        let dying = p.leavesAtMs != nil
        let live = p.connected && !dying
        switch timed.step {
        case .join(_, let traits):
            guard !p.connected else { return false }
            if p.arrival != nil, traits != p.traits, !timing.supportsNewTraits { return false }
            p.connected = true
            p.sendingVideo = true
            p.muted = false
            p.traits = traits
            if p.arrival == nil {
                p.arrival = nextArrival
                nextArrival += 1
            }
            startVideo(&p, at: t, newConnection: true)
        case .leave:
            guard live else { return false }
            if timing.leaveShownAfterMs > 0 {
                p.leavesAtMs = t + timing.leaveShownAfterMs
            } else {
                p.connected = false
            }
            p.changes += [t, t + timing.leaveShownAfterMs]
        case .kill(_, let after):
            guard live, timing.supportsKill else { return false }
            if p.sendingVideo { stopVideo(&p, at: t) }
            // Its last media (sent at t) plays out until t + latency, unless noticed later.
            p.leavesAtMs = t + max(after, timing.leaveShownAfterMs)
            p.changes.append(t + max(after, timing.leaveShownAfterMs))
        case .stopVideo:
            guard live, p.sendingVideo else { return false }
            stopVideo(&p, at: t)
        case .startVideo:
            guard live, !p.sendingVideo else { return false }
            startVideo(&p, at: t, newConnection: false)
        case .mute:
            guard live, timing.supportsMute, !p.muted else { return false }
            p.muted = true
            p.changes.append(t)
        case .unmute:
            guard live, timing.supportsMute, p.muted else { return false }
            p.muted = false
            p.changes.append(t)
        case .resize:
            guard live, timing.supportsResize, p.sendingVideo else { return false }
            p.changes += [t, t + timing.pictureDelayMs]
        case .setTraits(_, let traits):
            guard live, timing.supportsDirection else { return false }
            // Exact: the next frame lays out by them (no settle).
            p.traits = traits
        case .relayout:
            return false
        }
        participants[index] = p
        applied.append(timed)
        return true
    }

    /// Video flows from `t`: the first frame goes at once and is on screen after the picture
    /// delay (a new connection has no earlier picture; a restart keeps its frozen one).
    private func startVideo(_ p: inout Participant, at t: Int64, newConnection: Bool) {
        if newConnection { p.pictureFromMs = nil }
        p.pictureFromBeforeStartMs = p.pictureFromMs
        p.sendingVideo = true
        p.videoStartedAtMs = t
        p.videoStoppedAtMs = nil
        if p.pictureFromMs == nil { p.pictureFromMs = t + timing.pictureDelayMs }
        p.changes += [t, t + timing.pictureDelayMs]
    }

    /// Live, the last picture stays until nothing came for the configured time.
    private func stopVideo(_ p: inout Participant, at t: Int64) {
        if t == p.videoStartedAtMs { p.pictureFromMs = p.pictureFromBeforeStartMs }
        p.sendingVideo = false
        p.videoStoppedAtMs = t
        p.changes += [t, t + timing.cameraOffAfterMs]
    }

    /// Whether the participant's view may be on either side of a change at `t`.
    public func isSettled(_ participant: Int, atMs t: Int64) -> Bool {
        guard let p = participants[participant] else { return true }
        return !p.changes.contains { abs($0 - t) <= timing.settleMs }
    }

    public var participantIndices: [Int] { participants.keys.sorted() }

    /// The layout in force at `t`: the latest change at or before it.
    public func layout(atMs t: Int64) -> ModelLayout {
        relayouts.last { $0.atMs <= t }?.layout ?? layout
    }

    /// What the composite must show at `t` (participants unsettled at `t` included as the
    /// model sees them: the checker does not hold the composite to them).
    public func expectedView(atMs t: Int64) -> StageView {
        var shown: [(index: Int, picture: Bool)] = []
        var audible: Set<String> = []
        let now = state(atMs: t)
        let layout = layout(atMs: t)
        for (index, p) in now where p.connected {
            let picture = hasPicture(p, atMs: t)
            if !p.muted { audible.insert(Self.id(index)) }
            if layout.omitStoppedVideo && !picture { continue }
            shown.append((index, picture))
        }
        let pictures = Dictionary(uniqueKeysWithValues: shown.map { ($0.index, $0.picture) })
        let ordered = arrange(shown.map(\.index), state: Dictionary(uniqueKeysWithValues: now), layout: layout)
        return StageView(tiles: ordered.map { StageView.Tile(participant: Self.id($0), picture: pictures[$0] ?? false) },
                         audible: audible)
    }

    /// The layout order of the participants shown: by the order attribute (numbers, then
    /// words, then none), then arrival; the first featured one first; with PiP, the first
    /// PiP one last (its window is drawn on top).
    private func arrange(_ indices: [Int], state: [Int: Participant], layout: ModelLayout) -> [Int] {
        var ordered = indices.sorted { a, b in
            let pa = state[a] ?? Participant(), pb = state[b] ?? Participant()
            let ka = orderKey(pa, layout), kb = orderKey(pb, layout)
            if ka != kb { return ka < kb }
            return (pa.arrival ?? 0) < (pb.arrival ?? 0)
        }
        var pip: Int?
        if layout.kind == .pip, let first = ordered.firstIndex(where: { state[$0]?.traits.pip == true }) {
            pip = ordered.remove(at: first)
        }
        if layout.featuredAttribute, let first = ordered.firstIndex(where: { state[$0]?.traits.featured == true }) {
            ordered.insert(ordered.remove(at: first), at: 0)
        }
        if let pip { ordered.append(pip) }
        return ordered
    }

    /// Participants' state at `t` (steps up to `t` applied, kills noticed by then).
    private func state(atMs t: Int64) -> [(Int, Participant)] {
        var replayed = StageModel(timing: timing, layout: layout)
        for step in applied where step.atMs <= t { replayed.apply(step) }
        return replayed.participants.keys.sorted().compactMap { index in
            guard var p = replayed.participants[index] else { return nil }
            if let leaves = p.leavesAtMs, leaves <= t { p.connected = false }
            return (index, p)
        }
    }

    private func hasPicture(_ p: Participant, atMs t: Int64) -> Bool {
        guard let from = p.pictureFromMs, t >= from else { return false }
        if p.sendingVideo { return true }
        guard let stopped = p.videoStoppedAtMs else { return false }
        return t < stopped + timing.cameraOffAfterMs
    }

    /// Numbers first (numerically), then words (by bytes), then no order attribute.
    private func orderKey(_ p: Participant, _ layout: ModelLayout) -> OrderKey {
        guard layout.orderAttribute, let value = p.traits.order, !value.isEmpty else { return .none }
        if let number = Int(value) { return .number(number) }
        return .word(Array(value.utf8))
    }

    private enum OrderKey: Comparable {
        case number(Int)
        case word([UInt8])
        case none

        static func < (a: OrderKey, b: OrderKey) -> Bool {
            switch (a, b) {
            case (.number(let x), .number(let y)): x < y
            case (.word(let x), .word(let y)): x.lexicographicallyPrecedes(y)
            case (.number, _): true
            case (.word, .none): true
            default: false
            }
        }
    }

    /// The first way `observed` breaks the model at `t`, or nil. Settled participants must
    /// be exactly as the model says (tile or none, picture or camera-off, heard or not, in
    /// order); unsettled ones may be either way; nobody may have two tiles or a tile the
    /// model has never heard of.
    public func violation(observed: StageView, atMs tick: Int64) -> String? {
        let t = tick + timing.frameLeadMs
        let expected = expectedView(atMs: t)
        var seen: Set<String> = []
        for tile in observed.tiles where !seen.insert(tile.participant).inserted {
            return "at \(t) ms \(tile.participant) has two tiles: \(observed)"
        }
        let known = Set(participants.keys.map(Self.id))
        if let stranger = seen.first(where: { !known.contains($0) }) { return "at \(t) ms a tile for unknown \(stranger)" }
        let settled = Set(participants.keys.filter { isSettled($0, atMs: t) }.map(Self.id))
        let expectedTiles = Dictionary(uniqueKeysWithValues: expected.tiles.map { ($0.participant, $0) })
        let observedTiles = Dictionary(uniqueKeysWithValues: observed.tiles.map { ($0.participant, $0) })
        for index in participants.keys.sorted() {
            let id = Self.id(index)
            guard settled.contains(id) else { continue }
            switch (expectedTiles[id], observedTiles[id]) {
            case (nil, nil): break
            case (let e?, nil): return "at \(t) ms \(id) has no tile, expected one (\(e.picture ? "picture" : "camera-off"))\n  expected \(expected)\n  observed \(observed)"
            case (nil, _?): return "at \(t) ms \(id) has a tile, expected none\n  expected \(expected)\n  observed \(observed)"
            case (let e?, let o?):
                if e.picture != o.picture {
                    return "at \(t) ms \(id) shows \(o.picture ? "a picture" : "camera-off"), expected \(e.picture ? "a picture" : "camera-off")\n  expected \(expected)\n  observed \(observed)"
                }
            }
            if expected.audible.contains(id) != observed.audible.contains(id) {
                return "at \(t) ms \(id) is \(observed.audible.contains(id) ? "" : "not ")mixed, expected the opposite\n  expected \(expected)\n  observed \(observed)"
            }
        }
        // Order: everyone the composite shows (settled ones are as expected by now), arranged
        // by the model's rules, must be listed in the same order.
        let now = Dictionary(uniqueKeysWithValues: state(atMs: t))
        let indices = observed.tiles.compactMap { tile in participants.keys.first { Self.id($0) == tile.participant } }
        let expectedOrder = arrange(indices, state: now, layout: layout(atMs: t)).map(Self.id)
        let observedOrder = observed.tiles.map(\.participant)
        if expectedOrder != observedOrder {
            return "at \(t) ms tile order \(observedOrder), expected \(expectedOrder)\n  expected \(expected)\n  observed \(observed)"
        }
        return nil
    }
}
