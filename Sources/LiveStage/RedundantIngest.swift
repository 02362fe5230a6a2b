// Redundant ingest (IVS `redundantIngest`): two encoders publish the same participant, each
// with a stream key of its own. Each connection pushes into a feed of its own (a LivePublisher
// on no composed stage); the switch forwards one feed's media, as that feed placed it on the
// stage clock, into the participant's publisher, which compositions and the individual
// recording read like any other: one media path, nothing decoded here.
//
//   connection (primary) ──▶ feed 0 ─┐
//                                     ├─ RedundantIngest (RedundantFeedSelector) ──▶ participant
//   connection (backup)  ──▶ feed 1 ─┘
//
// A switch waits for no keyframe: the new feed's packets since its last keyframe (kept here,
// bounded) go first, stamped one millisecond apart after the last picture forwarded, so a
// consumer decodes up to now within one tick and shows the newest frame, and the timestamps it
// sees only move forward. The sound goes on after the last sound forwarded: none twice.

public import MediaCore
import Synchronization

/// Which feed of a redundant pair is shown. Pure, on explicit stage-clock times (µs):
///
/// - the first feed to connect is shown;
/// - the shown feed is replaced by the other at once when it disconnects, or when its video
///   stops for `stallAfter` (the jitter allowance: any later frame is a held picture already)
///   while the other sends video it can start from;
/// - the primary (credential 0) is shown again once it has sent video without a stall for
///   `returnAfter`, at its next keyframe (so a flapping primary is not followed).
public struct RedundantFeedSelector: Sendable, Equatable {
    public static let primary = 0, backup = 1

    public enum Reason: String, Sendable, Equatable {
        case joined, left, stalled
        case primaryBack = "primary back"
    }

    /// A change of the shown feed (`to` nil: neither is connected).
    public struct Switch: Sendable, Equatable {
        public var from: Int?
        public var to: Int?
        public var reason: Reason

        public init(from: Int?, to: Int?, reason: Reason) {
            self.from = from
            self.to = to
            self.reason = reason
        }
    }

    public let stallAfter: Int64
    public let returnAfter: Int64
    public private(set) var active: Int?
    private var connected = [false, false]
    private var joinedAt: [Int64] = [0, 0]
    private var lastVideo: [Int64?] = [nil, nil]
    /// Since when each feed's video came with no gap over `stallAfter`.
    private var steadySince: [Int64?] = [nil, nil]

    public init(stallAfter: Int64, returnAfter: Int64) {
        self.stallAfter = stallAfter
        self.returnAfter = returnAfter
    }

    public func isConnected(_ feed: Int) -> Bool { connected[feed] }

    public mutating func joined(_ feed: Int, at now: Int64) -> Switch? {
        connected[feed] = true
        joinedAt[feed] = now
        lastVideo[feed] = nil
        steadySince[feed] = nil
        guard active == nil else { return nil }
        active = feed
        return Switch(from: nil, to: feed, reason: .joined)
    }

    public mutating func left(_ feed: Int, at now: Int64) -> Switch? {
        connected[feed] = false
        lastVideo[feed] = nil
        steadySince[feed] = nil
        guard active == feed else { return nil }
        let other = 1 - feed
        active = connected[other] ? other : nil
        return Switch(from: feed, to: active, reason: .left)
    }

    /// A video packet of `feed` at `now`. `canStart`: the feed has a keyframe to be shown from.
    public mutating func video(_ feed: Int, keyframe: Bool, at now: Int64, canStart: Bool) -> Switch? {
        guard connected[feed] else { return nil }
        if let last = lastVideo[feed], now &- last <= stallAfter {
            if steadySince[feed] == nil { steadySince[feed] = last }
        } else {
            steadySince[feed] = now
        }
        lastVideo[feed] = now
        guard let shown = active, shown != feed, canStart else { return nil }
        if now &- (lastVideo[shown] ?? joinedAt[shown]) > stallAfter {
            active = feed
            return Switch(from: shown, to: feed, reason: .stalled)
        }
        if feed == Self.primary, keyframe, let since = steadySince[feed], now &- since >= returnAfter {
            active = feed
            return Switch(from: shown, to: feed, reason: .primaryBack)
        }
        return nil
    }
}

/// The switch of one redundant participant: its two feeds in, the participant's publisher out.
public final class RedundantIngest: Sendable {
    /// Recent sound kept per feed, to go on from at a switch (about a second of AAC).
    public static let audioKept = 64
    /// A switch's catch-up pictures are this far apart (µs): one tick of any muxer's clock.
    public static let catchUpStep: Int64 = 1000

    private struct Feed {
        var publisher: LivePublisher?
        var setups: [MediaType: CodecConfiguration] = [:]
        /// The packets since its last video keyframe (bounded like the hub's cache).
        var pictures: [LiveMediaPacket] = []
        var pictureBytes = 0
        var sound: [LiveMediaPacket] = []
    }

    private struct State {
        var selector: RedundantFeedSelector
        var feeds = [Feed(), Feed()]
        /// What the participant's consumers were told and given last.
        var announced: [MediaType: CodecConfiguration] = [:]
        var lastPictureDts: Int64?
        var lastSoundPts: Int64?
        var switches = 0
    }

    /// The participant the stage shows.
    public let participant: LivePublisher
    private let clock: any MediaClock
    private let cacheBytes: Int
    private let cachePackets: Int
    private let onSwitch: @Sendable (RedundantFeedSelector.Switch) -> Void
    private let state: Mutex<State>

    /// `onSwitch` is told every change of the shown feed (under the feeds' locks: it must not
    /// call back into them).
    public init(participant: LivePublisher, clock: any MediaClock, settings: LiveMediaSettings, returnAfter: Int64 = 5_000_000,
                onSwitch: @escaping @Sendable (RedundantFeedSelector.Switch) -> Void = { _ in }) {
        self.participant = participant
        self.clock = clock
        cacheBytes = settings.keyframeCacheBytes
        cachePackets = settings.keyframeCachePackets
        self.onSwitch = onSwitch
        state = Mutex(State(selector: RedundantFeedSelector(stallAfter: settings.latency, returnAfter: returnAfter)))
    }

    /// The feed shown now (0 primary, 1 backup), nil when neither is connected.
    public var active: Int? { state.withLock { $0.selector.active } }

    /// How often the shown feed changed from one feed to the other.
    public var switchCount: Int { state.withLock { $0.switches } }

    public func isConnected(_ feed: Int) -> Bool { state.withLock { $0.selector.isConnected(feed) } }

    /// The connection of `feed` publishes into `publisher` (on no composed stage) from now on.
    public func attach(_ feed: Int, publisher: LivePublisher) {
        let now = clock.now().microsecondsValue
        state.withLock { state in
            state.feeds[feed] = Feed(publisher: publisher)
            if let change = state.selector.joined(feed, at: now) { perform(change, &state) }
        }
        publisher.followDemand(of: participant)
        publisher.tap { [self] packet in receive(packet, feed: feed, from: publisher) }
    }

    /// That feed's connection ended. True when neither feed is left (the participant leaves).
    @discardableResult
    public func detach(_ feed: Int, publisher: LivePublisher) -> Bool {
        let now = clock.now().microsecondsValue
        return state.withLock { state in
            if state.feeds[feed].publisher === publisher {
                state.feeds[feed] = Feed()
                if let change = state.selector.left(feed, at: now) { perform(change, &state) }
            }
            return !state.selector.isConnected(0) && !state.selector.isConnected(1)
        }
    }

    private func receive(_ packet: LiveMediaPacket, feed: Int, from publisher: LivePublisher) {
        let now = clock.now().microsecondsValue
        state.withLock { state in
            guard state.feeds[feed].publisher === publisher else { return }
            let shown = state.selector.active == feed
            switch packet.content {
            case .configuration(let configuration):
                state.feeds[feed].setups[packet.type] = configuration
                if shown { announce(configuration, &state) }
                return
            case .data(let bytes):
                if packet.type == .video {
                    keepPicture(packet, size: bytes.count, feed: feed, &state)
                    let canStart = !state.feeds[feed].pictures.isEmpty
                    if let change = state.selector.video(feed, keyframe: packet.isKeyframe, at: now, canStart: canStart) {
                        // The new feed's pictures since its keyframe, this one included, go out now.
                        perform(change, &state)
                        return
                    }
                } else {
                    state.feeds[feed].sound.append(packet)
                    if state.feeds[feed].sound.count > Self.audioKept { state.feeds[feed].sound.removeFirst() }
                }
                if shown { forward(packet, bytes: bytes, &state) }
            }
        }
    }

    private func keepPicture(_ packet: LiveMediaPacket, size: Int, feed: Int, _ state: inout State) {
        if packet.isKeyframe {
            state.feeds[feed].pictures.removeAll(keepingCapacity: true)
            state.feeds[feed].pictureBytes = 0
        }
        guard packet.isKeyframe || !state.feeds[feed].pictures.isEmpty else { return }
        if state.feeds[feed].pictureBytes + size <= cacheBytes, state.feeds[feed].pictures.count < cachePackets {
            state.feeds[feed].pictures.append(packet)
            state.feeds[feed].pictureBytes += size
        } else {
            state.feeds[feed].pictures.removeAll()
            state.feeds[feed].pictureBytes = 0
        }
    }

    private func announce(_ configuration: CodecConfiguration, _ state: inout State) {
        let type = configuration.codec.mediaType
        guard state.announced[type] != configuration else { return }
        state.announced[type] = configuration
        participant.announce(configuration)
    }

    private func forward(_ packet: LiveMediaPacket, bytes: [UInt8], _ state: inout State) {
        if packet.type == .audio {
            // Never a sound twice: after a switch the new feed goes on after the last one sent.
            if let last = state.lastSoundPts, packet.pts <= last { return }
            state.lastSoundPts = packet.pts
            participant.pushStageTimed(.audio, data: bytes, dts: packet.dts, pts: packet.pts, isKeyframe: packet.isKeyframe)
            return
        }
        var dts = packet.dts, pts = packet.pts
        if let last = state.lastPictureDts, dts <= last {
            // A catch-up picture older than what was shown: one step after it, in order.
            let delay = pts &- dts
            dts = last &+ Self.catchUpStep
            pts = dts &+ delay
        }
        state.lastPictureDts = dts
        participant.pushStageTimed(.video, data: bytes, dts: dts, pts: pts, isKeyframe: packet.isKeyframe)
    }

    private func perform(_ change: RedundantFeedSelector.Switch, _ state: inout State) {
        if change.from != nil, change.to != nil { state.switches += 1 }
        onSwitch(change)
        guard let to = change.to else { return }   // nobody to show: the last picture holds, then stops
        let feed = state.feeds[to]
        for type in [MediaType.video, .audio] {
            if let setup = feed.setups[type] { announce(setup, &state) }
        }
        for packet in feed.pictures {
            if case .data(let bytes) = packet.content { forward(packet, bytes: bytes, &state) }
        }
        for packet in feed.sound {
            if case .data(let bytes) = packet.content { forward(packet, bytes: bytes, &state) }
        }
    }
}
