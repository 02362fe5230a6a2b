// What one publisher's configuration changes may cost its individual recording, and when the
// EVENT playlist is written: the bounds on a recording's work. Pure and sans-I/O, on explicit
// time (stage-clock µs); ParticipantRecorder carries out what these decide.
//
// Each new codec configuration (an RTMP sequence header, an in-band SPS over WHIP) needs a new
// initialization section, and ends the segment being cut. A publisher changing resolution every
// frame once made an init section, a one-frame segment and a rewrite of the whole playlist per
// frame (issue 38: 4,814 objects in 80 s). Here:
// - a change costs a new initialization section only while a budget allows (a burst, then one
//   per interval); beyond it the change waits — that stream's media is dropped and counted —
//   and when the budget allows, the *latest* configuration starts the new run at its keyframe
//   (changes in between are coalesced); a change back to the run's own configuration needs
//   no new section at all; the other stream goes on being recorded meanwhile;
// - a configuration that cannot be recorded (RecordablePicture) is refused: that stream's media
//   is dropped until a good configuration (and, for video, a keyframe) comes;
// - the playlist is written at most once per interval of media time (PlaylistWriteSchedule).
public import MediaCore

/// The streams of a recording.
public enum RecordedStream: Hashable, Sendable, CaseIterable {
    case video, audio
}

/// The pictures a recording takes. A configuration beyond them is refused, not recorded: MP4
/// cannot describe it, or no decoder of the stage would open it.
public struct RecordablePicture: Sendable, Equatable {
    /// The widest or tallest picture. H.264 and HEVC allow at most 16,888 pixels at any level
    /// (√(8 · MaxFS) macroblocks); MP4's sample entry 65,535.
    public var maxSide: Int
    /// The largest area: the stage's decoders' (`DecoderLimits.maxPixels`).
    public var maxPixels: Int64

    public init(maxSide: Int = 16_384, maxPixels: Int64) {
        self.maxSide = maxSide
        self.maxPixels = maxPixels
    }

    /// Why a `width`×`height` picture is refused, or nil when it is recordable. 0×0 is a size
    /// not announced (WHIP), recordable: the keyframe's parameter sets say it.
    public func refusal(width: Int, height: Int) -> String? {
        if width == 0, height == 0 { return nil }
        guard width > 0, height > 0 else { return "picture size \(width)x\(height) is not valid" }
        guard width <= maxSide, height <= maxSide else { return "picture size \(width)x\(height) exceeds \(maxSide) on a side" }
        guard Int64(width) * Int64(height) <= maxPixels else {
            return "picture size \(width)x\(height) exceeds \(maxPixels) pixels"
        }
        return nil
    }
}

/// Decides, per configuration change and per packet, whether a stream's media goes into the
/// current run, starts a new run (a new initialization section), or is dropped.
///
/// A run is the stretch of a recording under one initialization section. The first starts
/// for free once every stream is configured (the owner holds media until then); every later
/// one costs one unit of a budget: `burst` at once, one more every `interval`.
public struct ConfigurationChangePolicy: Sendable {
    /// New runs allowed at once (a simulcast publisher switching layers a few times), then
    /// one more per `interval` µs, sustained.
    public typealias Budget = TokenBucket.Rate

    /// Four at once, then one every 2 s.
    public static let standardBudget = Budget(burst: 4, interval: 2_000_000)

    /// A stream's configuration as the policy sees it.
    public enum Configuration: Equatable, Sendable {
        /// Recordable; `key` names what its initialization section stands for.
        case recordable(key: String)
        /// Not recordable, and why.
        case refused(reason: String)
    }

    public enum ChangeOutcome: Equatable, Sendable {
        /// The same configuration as the stream's latest: nothing to do.
        case unchanged
        /// A new configuration. Before the first run, the stream's held media belongs to the
        /// old one: `discardHeld` (the owner drops it).
        case changed(discardHeld: Bool)
        /// Refused; its media is dropped until the next good one. `report`: say so (the first
        /// refusal in `reportInterval`; the rest are counted).
        case refused(reason: String, report: Bool, discardHeld: Bool)
    }

    public enum DropReason: Equatable, Sendable {
        /// The stream has no configuration (yet, or since its publisher reconnected).
        case notConfigured
        /// Its configuration was refused.
        case refusedConfiguration
        /// Video resumes at a keyframe (after a reconnect, a refusal, a change not made).
        case awaitingKeyframe
        /// Its configuration changed and the budget allows no new run yet.
        case changeDeferred
    }

    public enum MediaAction: Equatable, Sendable {
        /// Into the current run (before the first run starts: held for it).
        case write
        /// The current run ends before this packet (a keyframe, or audio); a new run starts
        /// from it with every stream's latest recordable configuration.
        case startRun
        case drop(DropReason)
        /// Dropped (a change waits for the budget until `until`), and said: the first such
        /// drop in `reportInterval`.
        case deferChange(until: Int64)
    }

    private struct Stream {
        /// The newest configuration the publisher sent; nil: none (yet, or since a reconnect).
        var latest: Configuration?
        /// The key in the current run's initialization section; nil: not in it.
        var recorded: String?
        var awaitsKeyframe: Bool

        var latestKey: String? {
            if case .recordable(let key) = latest { return key }
            return nil
        }
    }

    public let budget: Budget
    /// Refusals and deferrals are logged at most once per this many µs each.
    public let reportInterval: Int64
    private var streams: [RecordedStream: Stream]
    /// A run started (or was tried): later ones cost budget.
    public private(set) var hasRun = false
    /// What is left of the budget.
    private var bucket: TokenBucket
    private var lastRefusalReport: Int64?
    private var lastDeferralReport: Int64?
    /// The streams whose configuration the last `.startRun` changed (blamed if it fails).
    private var changedByLastStart: Set<RecordedStream> = []

    /// New runs started for a configuration change (the first run not counted).
    public private(set) var runsForChanges = 0
    /// Configurations refused.
    public private(set) var refusedConfigurations = 0
    /// Configurations replaced (or reverted) before they could start a run of their own.
    public private(set) var coalescedConfigurations = 0
    /// Packets dropped for a refused configuration or a deferred change.
    public private(set) var droppedPackets = 0

    public init(streams: Set<RecordedStream>, budget: Budget = standardBudget, reportInterval: Int64 = 10_000_000) {
        self.budget = budget
        self.reportInterval = reportInterval
        self.streams = Dictionary(uniqueKeysWithValues: streams.map { ($0, Stream(latest: nil, recorded: nil, awaitsKeyframe: $0 == .video)) })
        bucket = TokenBucket(rate: budget)
    }

    /// Every stream has a configuration (recordable or refused): the first run may start.
    public var everyStreamConfigured: Bool { streams.values.allSatisfy { $0.latest != nil } }

    /// The streams a run started now would carry: their latest configuration is recordable.
    public var recordableStreams: Set<RecordedStream> { Set(streams.compactMap { $0.value.latestKey == nil ? nil : $0.key }) }

    public func isRefused(_ stream: RecordedStream) -> Bool {
        if case .refused = streams[stream]?.latest { return true }
        return false
    }

    /// True while a stream's media is not being recorded (refused, waiting for a change or
    /// a keyframe): the run's segments are then cut at any packet, not at its keyframes.
    public func isSuspended(_ stream: RecordedStream) -> Bool {
        guard let state = streams[stream] else { return true }
        return state.latestKey == nil || state.latestKey != state.recorded || state.awaitsKeyframe
    }

    /// The publisher sent `configuration` for `stream` at `time`.
    public mutating func configured(_ stream: RecordedStream, _ configuration: Configuration, at time: Int64) -> ChangeOutcome {
        guard var state = streams[stream], state.latest != configuration else { return .unchanged }
        defer { streams[stream] = state }
        let wasPending = hasRun && state.latestKey != nil && state.latestKey != state.recorded
        let hadConfiguration = state.latest != nil
        state.latest = configuration
        if stream == .video { state.awaitsKeyframe = true }
        if wasPending { coalescedConfigurations += 1 }
        let discardHeld = !hasRun && hadConfiguration
        switch configuration {
        case .refused(let reason):
            refusedConfigurations += 1
            let report = lastRefusalReport.map { time - $0 >= reportInterval || time < $0 } ?? true
            if report { lastRefusalReport = time }
            return .refused(reason: reason, report: report, discardHeld: !hasRun)
        case .recordable:
            return .changed(discardHeld: discardHeld)
        }
    }

    /// A packet of `stream` at `time` (audio packets count as keyframes).
    public mutating func packet(_ stream: RecordedStream, keyframe: Bool, at time: Int64) -> MediaAction {
        guard let state = streams[stream] else { return .drop(.notConfigured) }
        switch state.latest {
        case nil:
            return .drop(.notConfigured)
        case .refused:
            droppedPackets += 1
            return .drop(.refusedConfiguration)
        case .recordable(let key) where hasRun && key != state.recorded:
            guard keyframe else {
                droppedPackets += 1
                return .drop(.changeDeferred)
            }
            guard bucket.take(at: time) else {
                droppedPackets += 1
                let report = lastDeferralReport.map { time - $0 >= reportInterval || time < $0 } ?? true
                guard report else { return .drop(.changeDeferred) }
                lastDeferralReport = time
                return .deferChange(until: time &+ bucket.waitForToken)
            }
            runsForChanges += 1
            changedByLastStart = []
            for other in Array(streams.keys) {
                guard var entry = streams[other] else { continue }
                if entry.latestKey != entry.recorded { changedByLastStart.insert(other) }
                entry.recorded = entry.latestKey
                // A new initialization section: video starts it at a keyframe (this one, or
                // the next when sound started the run).
                entry.awaitsKeyframe = other == .video && other != stream
                streams[other] = entry
            }
            return .startRun
        case .recordable:
            guard state.awaitsKeyframe else { return .write }
            guard keyframe else { return .drop(.awaitingKeyframe) }
            streams[stream]?.awaitsKeyframe = false
            return .write
        }
    }

    /// The first run started (the owner held media until every stream was configured), with
    /// every recordable stream's latest configuration.
    public mutating func firstRunStarted() {
        hasRun = true
        for (stream, state) in streams { streams[stream]?.recorded = state.latestKey }
    }

    /// A run carrying `streams` could not start (the muxer refused a configuration): the
    /// configuration that changed is refused — video's, when both did (MP4 refuses pictures;
    /// sound rarely) — and nothing is in a run until the budget allows another.
    public mutating func runFailed(carrying streams: Set<RecordedStream>, reason: String) {
        let changed = hasRun ? changedByLastStart.intersection(streams) : streams
        let suspects = changed.isEmpty ? streams : changed
        let blamed: RecordedStream? = suspects.contains(.video) ? .video : suspects.first
        hasRun = true
        for stream in Array(self.streams.keys) {
            self.streams[stream]?.recorded = nil
            if stream == blamed {
                self.streams[stream]?.latest = .refused(reason: reason)
                refusedConfigurations += 1
            }
            if stream == .video { self.streams[stream]?.awaitsKeyframe = true }
        }
    }

    /// The next media comes from a new connection of the same participant: every stream is
    /// configured again, and video resumes at a keyframe. The run goes on if nothing changed.
    public mutating func sourceReplaced() {
        for stream in Array(streams.keys) {
            streams[stream]?.latest = nil
            streams[stream]?.awaitsKeyframe = stream == .video
        }
    }

}

/// When the EVENT playlist is rewritten: at most once per `interval` of media time, so a
/// burst of short segments costs one write. A write put off is made at the first packet after
/// the interval, or by `flush` (the connection ended; the recording finishes).
public struct PlaylistWriteSchedule: Sendable {
    public let interval: Int64
    private var lastWrite: Int64?
    private var newest: Int64 = .min
    public private(set) var pending = false

    public init(interval: Int64 = 1_000_000) { self.interval = max(1, interval) }

    /// A segment was added at `time`: true to write the playlist now.
    public mutating func segmentAdded(at time: Int64) -> Bool {
        pending = true
        return due(at: time)
    }

    /// Media at `time`: true to write a playlist put off before.
    public mutating func due(at time: Int64) -> Bool {
        newest = max(newest, time)
        guard pending, lastWrite.map({ newest - $0 >= interval }) ?? true else { return false }
        pending = false
        lastWrite = newest
        return true
    }

    /// True when a write was put off: make it now.
    public mutating func flush() -> Bool {
        defer { pending = false }
        if pending, newest != .min { lastWrite = newest }
        return pending
    }
}
