// What a composition applied, on its own clock: the layout, audio and overlays it started with, each
// producer's change (UpdateComposition, a recorded stage's directions) and each participant's
// attributes as the composition saw them change (UpdateParticipant, token exchanges). The
// recording keeps it as `events/directions.json`, so a re-render from the individual
// recordings is directed the same way. Kept on the composition thread; bounded.

public import Foundation
public import Stages

public final class DirectionLog {
    public let stageArn: String
    /// Wall-clock time (ms since 1970) of composition time 0, once known.
    public var startedAtMs: Int64?
    public private(set) var directions: [StageDirection] = []
    /// Directions left out once the log is full.
    public private(set) var dropped = 0
    /// The attributes each participant was last seen with.
    private var attributes: [String: [String: String]] = [:]
    /// Whether anything was directed (a change, or attributes that changed): only then is there
    /// a file, so an undirected recording's events/ are exactly IVS's.
    public private(set) var directed = false
    public static let limit = StageDirection.maximumCount

    public init(stageArn: String) {
        self.stageArn = stageArn
    }

    /// What the composition starts with (not a change: alone, it writes no file).
    public func start(_ initial: CompositionDirection) {
        append(StageDirection(atMs: 0, layout: initial.layout, transitionMs: initial.layout == nil ? nil : initial.transitionMs,
                              audio: initial.audio.isEmpty ? nil : initial.audio, overlays: initial.overlays?.configuration))
    }

    /// A change applied from composition time `atMicroseconds` on.
    public func record(_ change: CompositionDirection, atMicroseconds: Int64) {
        directed = true
        append(StageDirection(atMs: atMicroseconds / 1000, layout: change.layout, transitionMs: change.layout == nil ? nil : change.transitionMs,
                              audio: change.audio.isEmpty ? nil : change.audio, overlays: change.overlays?.configuration))
    }

    /// The participants a tick composed: whoever's attributes differ from the last seen are
    /// recorded (the first time, when it has any). Cheap when nothing changed.
    public func observe(_ participants: [StageParticipantState], atMicroseconds: Int64) {
        var changed: [String: [String: String]]?
        for state in participants where attributes[state.participantId] != state.attributes {
            let first = attributes[state.participantId] == nil
            if !first { directed = true }
            attributes[state.participantId] = state.attributes
            if first && state.attributes.isEmpty { continue }
            changed = changed ?? [:]
            changed?[state.participantId] = state.attributes
        }
        if let changed { append(StageDirection(atMs: atMicroseconds / 1000, attributes: changed)) }
    }

    private func append(_ direction: StageDirection) {
        guard directions.count < Self.limit else {
            dropped += 1
            return
        }
        var direction = direction
        if let startedAtMs { direction.wallClockMs = startedAtMs &+ direction.atMs }
        directions.append(direction)
    }

    /// `events/directions.json`; nil when nothing was directed.
    public func json() -> Data? {
        guard directed, !directions.isEmpty else { return nil }
        let record = DirectionsRecord(stageArn: stageArn, startedAtMs: startedAtMs, directions: directions)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return try? encoder.encode(record)
    }
}
