// Who is publishing on each live stage right now, and the media they send, fanned out to
// every composition subscribed to the stage.
//
//   ingest connection ──announce/push──▶ LivePublisher ──(one bounded queue per composition)──▶
//        (NIO event loop: parse, stamp)        │ timestamps mapped onto the stage clock
//                                              │ setups + last keyframe's GOP for late joiners
//   composition thread ◀── LiveStageSubscription (who is on the stage, a queue each) ◀── hub
//
// Locks are taken in one order only: hub → publisher → queue, and hub → subscription. A
// publisher's push takes its own lock and its queues' locks, never the hub's.

import Foundation
public import MediaCore
import Synchronization

/// Tunables of live media, in stage-clock microseconds.
public struct LiveMediaSettings: Sendable, Equatable {
    /// How far behind the least-delayed packets media may arrive and still be on time; also
    /// the delay a publisher's media is shown with (the jitter allowance): at most this.
    public var latency: Int64
    /// The least jitter allowance: with one, each publisher's is measured from how late its
    /// packets arrive (`LiveTimestampMapper`), between this and `latency`; nil: `latency`
    /// for everyone.
    public var minimumLatency: Int64?
    /// Where a measured allowance starts (nil: at `latency`, the most, coming down as the
    /// publisher's jitter is learned).
    public var initialLatency: Int64?
    /// A publisher that sends no video for this long is shown as stopped video.
    public var videoStoppedAfter: Int64
    public var queue: LiveQueueLimits
    /// The packets since the last video keyframe are kept (up to this many bytes and
    /// packets: a flood of empty frames costs packets, not bytes) so a composition that
    /// subscribes mid-stream starts with a picture instead of waiting for the next keyframe.
    public var keyframeCacheBytes: Int
    public var keyframeCachePackets: Int

    public init(latency: Int64 = 200_000, minimumLatency: Int64? = nil, initialLatency: Int64? = nil,
                videoStoppedAfter: Int64 = 3_000_000, queue: LiveQueueLimits = LiveQueueLimits(),
                keyframeCacheBytes: Int = 4 << 20, keyframeCachePackets: Int = 600) {
        self.latency = latency
        self.minimumLatency = minimumLatency
        self.initialLatency = initialLatency
        self.videoStoppedAfter = videoStoppedAfter
        self.queue = queue
        self.keyframeCacheBytes = keyframeCacheBytes
        self.keyframeCachePackets = keyframeCachePackets
    }

    /// Publisher timestamps beyond this (µs either way, about 140 years) are not time: such
    /// packets are dropped and counted, so no arithmetic on them downstream can overflow.
    public static let timestampLimit: Int64 = 1 << 52
}

/// The participant a publisher joined as (from its ingest configuration or token).
public struct LiveParticipantIdentity: Sendable, Equatable {
    public var participantId: String
    public var userId: String
    public var attributes: [String: String]
    /// A replica (participant replication): the stage ARN of the participant it copies. A
    /// replica is never a source of replication, nor a reconnect of its own source.
    public var replicaOf: String?

    public init(participantId: String, userId: String, attributes: [String: String], replicaOf: String? = nil) {
        self.participantId = participantId
        self.userId = userId
        self.attributes = attributes
        self.replicaOf = replicaOf
    }
}

public final class LiveStageHub: Sendable {
    private struct StageState {
        /// In join order.
        var publishers: [LivePublisher] = []
        var subscriptions: [LiveStageSubscription] = []
        /// Each participant's place in the order of arrival on the stage, kept across its
        /// reconnects (for as long as the stage has publishers or compositions), so a
        /// reconnect keeps its tile and every composition orders tiles alike.
        var arrivals: [String: Int] = [:]
    }

    public let clock: any MediaClock
    public let settings: LiveMediaSettings
    /// Wall-clock time (ms since 1970) of stage-clock time 0: how recordings made from this
    /// hub's media (composite and individual) say when their first frame happened
    /// (EXT-X-PROGRAM-DATE-TIME), so they can be lined up against each other later.
    public let wallClockEpochMs: Int64
    private let stages = Mutex<[String: StageState]>([:])
    private let generations = Atomic<UInt64>(0)

    public init(clock: any MediaClock, settings: LiveMediaSettings = LiveMediaSettings(), wallClockEpochMs: Int64? = nil) {
        self.clock = clock
        self.settings = settings
        self.wallClockEpochMs = wallClockEpochMs
            ?? Int64((Date().timeIntervalSince1970 * 1000).rounded()) &- clock.now().microsecondsValue / 1000   // our own clocks
    }

    /// The wall-clock time (ms since 1970) of a stage-clock time (µs).
    public func wallClockMs(atStageMicroseconds micro: Int64) -> Int64 {
        wallClockEpochMs &+ Int64.floorDivide(micro, 1000)
    }

    /// A publisher joins `stageArn`; media pushed through the returned handle reaches every
    /// composition of the stage. `disconnect` is how the hub asks the connection to close
    /// (DisconnectParticipant); it must return quickly.
    public func join(stageArn: String, identity: LiveParticipantIdentity,
                     disconnect: @escaping @Sendable (String) -> Void = { _ in }) -> LivePublisher {
        let generation = generations.add(1, ordering: .relaxed).newValue
        let (publisher, replaced): (LivePublisher, LivePublisher?) = stages.withLock { stages in
            var stage = stages[stageArn] ?? StageState()
            let arrival = stage.arrivals[identity.participantId] ?? stage.arrivals.count
            stage.arrivals[identity.participantId] = arrival
            let publisher = LivePublisher(hub: self, stageArn: stageArn, identity: identity, generation: generation,
                                          arrivalIndex: arrival, disconnect: disconnect)
            let old = stage.publishers.first { $0.identity.participantId == identity.participantId }
            stage.publishers.removeAll { $0.identity.participantId == identity.participantId }
            stage.publishers.append(publisher)
            for subscription in stage.subscriptions {
                if let old { subscription.remove(old) }
                let queue = LiveMediaQueue(limits: settings.queue)
                publisher.attach(queue)
                subscription.add(LiveStageSubscription.Entry(publisher: publisher, queue: queue))
            }
            stages[stageArn] = stage
            return (publisher, old)
        }
        replaced?.end(notifyHub: false)
        return publisher
    }

    /// A publisher's attributes change (token exchange, UpdateParticipant): every composition
    /// of the stage sees them from its next frame. False when it is not publishing here.
    @discardableResult
    public func updateAttributes(stageArn: String, participantId: String, attributes: [String: String]) -> Bool {
        stages.withLock { stages in
            guard let stage = stages[stageArn],
                  let publisher = stage.publishers.first(where: { $0.identity.participantId == participantId }) else { return false }
            publisher.setAttributes(attributes)
            for subscription in stage.subscriptions { subscription.touch() }
            return true
        }
    }

    /// Subscribes a composition to a stage: every current and future publisher gets a queue.
    public func subscribe(stageArn: String) -> LiveStageSubscription {
        let subscription = LiveStageSubscription(hub: self, stageArn: stageArn)
        stages.withLock { stages in
            var stage = stages[stageArn] ?? StageState()
            for publisher in stage.publishers {
                let queue = LiveMediaQueue(limits: settings.queue)
                publisher.attach(queue)
                subscription.add(LiveStageSubscription.Entry(publisher: publisher, queue: queue))
            }
            stage.subscriptions.append(subscription)
            stages[stageArn] = stage
        }
        return subscription
    }

    /// Publishers on the stage now, in join order.
    public func publishers(stageArn: String) -> [LivePublisher] {
        stages.withLock { $0[stageArn]?.publishers ?? [] }
    }

    /// Asks a publisher's connection to close (DisconnectParticipant). False if not publishing.
    @discardableResult
    public func disconnect(stageArn: String, participantId: String, reason: String) -> Bool {
        guard let publisher = publishers(stageArn: stageArn).first(where: { $0.identity.participantId == participantId }) else {
            return false
        }
        publisher.disconnectHandler(reason)
        return true
    }

    func remove(_ publisher: LivePublisher) {
        stages.withLock { stages in
            guard var stage = stages[publisher.stageArn] else { return }
            stage.publishers.removeAll { $0 === publisher }
            for subscription in stage.subscriptions { subscription.remove(publisher) }
            stages[publisher.stageArn] = stage.publishers.isEmpty && stage.subscriptions.isEmpty ? nil : stage
        }
    }

    func unsubscribe(_ subscription: LiveStageSubscription) {
        let detached: [LiveStageSubscription.Entry] = stages.withLock { stages in
            guard var stage = stages[subscription.stageArn] else { return [] }
            stage.subscriptions.removeAll { $0 === subscription }
            stages[subscription.stageArn] = stage.publishers.isEmpty && stage.subscriptions.isEmpty ? nil : stage
            return subscription.removeAll()
        }
        for entry in detached { entry.publisher.detach(entry.queue) }
    }
}

/// One publisher's connection to a stage. Its owner (the ingest connection) announces stream
/// setups and pushes packets from one thread at a time; `leave()` ends it.
public final class LivePublisher: Sendable {
    private struct State {
        var mapper: LiveTimestampMapper
        var setups: [MediaType: CodecConfiguration] = [:]
        /// The packets since the last video keyframe, for compositions that subscribe late.
        var keyframeCache: [LiveMediaPacket] = []
        var keyframeCacheBytes = 0
        var queues: [LiveMediaQueue] = []
        var lastVideoArrival: Int64?
        /// The latest decode time pushed (stage µs): how far the queued media reaches.
        var lastMediaTime: Int64?
        /// Stage time the connection ended.
        var leftAt: Int64?
        var ended = false
        var receivedPackets: Int64 = 0
        var receivedBytes: Int64 = 0
        /// Packets dropped because their timestamps were out of any sane range.
        var droppedTimestamps: Int64 = 0
        /// A composition's queue overflowed and its video waits for a keyframe.
        var keyframeWanted = false
        /// Sees every setup and packet as placed on the stage clock (a redundant-ingest feed
        /// hands its media to the switch that picks the participant's), under this lock.
        var tap: (@Sendable (LiveMediaPacket) -> Void)?
        /// Whose consumers' demand this publisher's connection follows (a redundant feed: its
        /// participant's); nil: its own queues'.
        var demandOf: LivePublisher?
    }

    public let stageArn: String
    /// Who joined, as they joined (`attributes` has what they are now).
    public let identity: LiveParticipantIdentity
    private let currentAttributes: Mutex<[String: String]>
    /// Distinguishes a reconnect (same participant ID) from the connection it replaces.
    public let generation: UInt64
    /// The participant's place in the stage's order of arrival (a reconnect keeps it).
    public let arrivalIndex: Int
    private let hub: LiveStageHub
    let disconnectHandler: @Sendable (String) -> Void
    private let state: Mutex<State>

    init(hub: LiveStageHub, stageArn: String, identity: LiveParticipantIdentity, generation: UInt64, arrivalIndex: Int,
         disconnect: @escaping @Sendable (String) -> Void) {
        self.arrivalIndex = arrivalIndex
        self.hub = hub
        self.stageArn = stageArn
        self.identity = identity
        currentAttributes = Mutex(identity.attributes)
        self.generation = generation
        disconnectHandler = disconnect
        state = Mutex(State(mapper: LiveTimestampMapper(latency: hub.settings.latency, minimumLatency: hub.settings.minimumLatency,
                                                        initialLatency: hub.settings.initialLatency)))
    }

    /// Wall-clock time (ms since 1970) of stage-clock time 0 (the hub's).
    public var wallClockEpochMs: Int64 { hub.wallClockEpochMs }

    /// The participant's attributes now: what it joined with, until a token exchange or
    /// UpdateParticipant changes them (`LiveStageHub.updateAttributes`).
    public var attributes: [String: String] { currentAttributes.withLock { $0 } }

    func setAttributes(_ attributes: [String: String]) { currentAttributes.withLock { $0 = attributes } }

    /// The publisher (re)announced a stream's codec setup (a sequence header).
    public func announce(_ configuration: CodecConfiguration) {
        let packet = LiveMediaPacket(type: configuration.codec.mediaType, content: .configuration(configuration),
                                     pts: 0, dts: 0, isKeyframe: false)
        state.withLock { state in
            guard !state.ended else { return }
            state.setups[configuration.codec.mediaType] = configuration
            for queue in state.queues { queue.push(packet) }
            state.tap?(packet)
        }
    }

    /// Hands every setup and packet from now on, placed on the stage clock, to `tap` (called
    /// under this publisher's lock: it must not call back into this publisher).
    public func tap(_ tap: @escaping @Sendable (LiveMediaPacket) -> Void) {
        state.withLock { $0.tap = tap }
    }

    /// One coded frame. `timestamp` is the publisher's decode time and `compositionOffset`
    /// the presentation delay after it (B-frames), both in µs of the publisher's clock.
    public func push(_ type: MediaType, data: [UInt8], timestamp: Int64, compositionOffset: Int64 = 0, isKeyframe: Bool) {
        deliver(type, data: data, times: (timestamp, compositionOffset), isKeyframe: isKeyframe) { state, arrival in
            let dts = state.mapper.presentationTime(mediaTime: timestamp, arrival: arrival)
            return (dts, dts + compositionOffset)
        }
    }

    /// A packet already on this hub's stage clock (a replica forwarding its source's media,
    /// which the source's own mapping placed): delivered as it is, not mapped again.
    public func pushStageTimed(_ type: MediaType, data: [UInt8], dts: Int64, pts: Int64, isKeyframe: Bool) {
        deliver(type, data: data, times: (dts, pts), isKeyframe: isKeyframe) { _, _ in (dts, pts) }
    }

    /// Checks `times` are sane (out of range: dropped and counted, so no arithmetic on them
    /// downstream can overflow), places the packet with `place` (dts, pts) and hands it to
    /// the keyframe cache and every queue.
    private func deliver(_ type: MediaType, data: [UInt8], times: (Int64, Int64), isKeyframe: Bool,
                         place: (inout State, Int64) -> (dts: Int64, pts: Int64)) {
        let arrival = hub.clock.now().microsecondsValue
        let cacheLimit = hub.settings.keyframeCacheBytes
        let cachePackets = hub.settings.keyframeCachePackets
        let limit = LiveMediaSettings.timestampLimit
        state.withLock { state in
            guard !state.ended, state.setups[type] != nil else { return }
            guard times.0 > -limit, times.0 < limit, times.1 > -limit, times.1 < limit else {
                state.droppedTimestamps += 1
                return
            }
            let (dts, pts) = place(&state, arrival)
            Self.deliver(LiveMediaPacket(type: type, content: .data(data), pts: pts, dts: dts, isKeyframe: type == .audio || isKeyframe),
                         size: data.count, arrival: arrival, cacheLimit: cacheLimit, cachePackets: cachePackets, state: &state)
        }
    }

    private static func deliver(_ packet: LiveMediaPacket, size: Int, arrival: Int64, cacheLimit: Int, cachePackets: Int,
                                state: inout State) {
        let type = packet.type, dts = packet.dts, isKeyframe = packet.isKeyframe
        state.receivedPackets += 1
        state.receivedBytes += Int64(size)
        state.lastMediaTime = max(state.lastMediaTime ?? dts, dts)
        if type == .video {
            state.lastVideoArrival = arrival
            if isKeyframe {
                state.keyframeCache.removeAll(keepingCapacity: true)
                state.keyframeCacheBytes = 0
            }
            if isKeyframe || !state.keyframeCache.isEmpty {
                if state.keyframeCacheBytes + size <= cacheLimit, state.keyframeCache.count < cachePackets {
                    state.keyframeCache.append(packet)
                    state.keyframeCacheBytes += size
                } else {
                    state.keyframeCache.removeAll()
                    state.keyframeCacheBytes = 0
                }
            }
        }
        for queue in state.queues where queue.push(packet) { state.keyframeWanted = true }
        state.tap?(packet)
    }

    /// A queue of this publisher's media alone (its setups and cached GOP first), for a
    /// consumer of one participant such as its individual recording. `detach` ends it.
    public func makeQueue() -> LiveMediaQueue {
        let queue = LiveMediaQueue(limits: hub.settings.queue)
        attach(queue)
        return queue
    }

    /// Asks the publisher for a keyframe (WHIP: a PLI; RTMP cannot ask), e.g. so that an
    /// individual recording can cut its segment near its target duration.
    public func requestKeyframe() { state.withLock { $0.keyframeWanted = true } }

    /// What the consumers of this publisher's media need of its picture, combined: a WebRTC
    /// simulcast publisher's connection composes the smallest layer that covers it.
    public var videoDemand: LiveVideoDemand {
        let (own, other) = state.withLock { state in (LiveVideoDemand.combined(state.queues.lazy.map(\.videoDemand)), state.demandOf) }
        return other?.videoDemand ?? own
    }

    /// From now on `videoDemand` is `publisher`'s (a redundant feed's connection picks its
    /// rendition for the participant's consumers, not for the feed's, which has none).
    public func followDemand(of publisher: LivePublisher) {
        state.withLock { $0.demandOf = publisher }
    }

    /// Stops feeding a queue from `makeQueue`.
    public func release(_ queue: LiveMediaQueue) { detach(queue) }

    /// Whether a composition lost video to an overflow since the last call: a WHIP
    /// connection asks its publisher for a keyframe at once (PLI) instead of waiting for the
    /// next one; RTMP cannot ask, and the last good picture stays until it comes.
    public func takeKeyframeRequest() -> Bool {
        state.withLock { state in
            defer { state.keyframeWanted = false }
            return state.keyframeWanted
        }
    }

    /// The connection closed (or was closed): compositions drain what is queued, then the
    /// participant is gone from the stage.
    public func leave() { end(notifyHub: true) }

    func end(notifyHub: Bool) {
        let now = hub.clock.now().microsecondsValue
        let queues: [LiveMediaQueue] = state.withLock { state in
            guard !state.ended else { return [] }
            state.ended = true
            state.leftAt = now
            state.tap = nil
            state.demandOf = nil
            defer { state.queues.removeAll() }
            return state.queues
        }
        for queue in queues { queue.finish() }
        if notifyHub { hub.remove(self) }
    }

    /// A new composition's queue: the current setups first, then the cached GOP.
    func attach(_ queue: LiveMediaQueue) {
        state.withLock { state in
            guard !state.ended else {
                queue.finish()
                return
            }
            for type in [MediaType.video, .audio] {
                if let setup = state.setups[type] {
                    queue.push(LiveMediaPacket(type: type, content: .configuration(setup), pts: 0, dts: 0, isKeyframe: false))
                }
            }
            for packet in state.keyframeCache { queue.push(packet) }
            state.queues.append(queue)
        }
    }

    func detach(_ queue: LiveMediaQueue) {
        state.withLock { $0.queues.removeAll { $0 === queue } }
    }

    /// Stage time (µs) at which the last video packet arrived; nil before any.
    public var lastVideoArrival: Int64? { state.withLock { $0.lastVideoArrival } }

    public var hasEnded: Bool { state.withLock { $0.ended } }

    /// The jitter allowance this publisher's media is shown with now (µs).
    public var latency: Int64 { state.withLock { $0.mapper.latency } }

    /// The jitter allowance now, and its steps up so far.
    public var allowance: LiveAllowance {
        state.withLock { LiveAllowance(latency: $0.mapper.latency, steps: $0.mapper.steps, steppedUp: $0.mapper.steppedUp) }
    }

    /// After the connection ended: the stage time until which compositions keep showing
    /// the participant, so the media already queued (the last `latency` of it) is seen and
    /// heard rather than cut off — the end of its last media, but no later than `latency`
    /// after it left. Nil while connected.
    public var departureTime: Int64? {
        let latency = hub.settings.latency
        return state.withLock { state in
            guard let leftAt = state.leftAt else { return nil }
            return min(max(state.lastMediaTime ?? leftAt, leftAt), leftAt + latency)
        }
    }

    public var received: (packets: Int64, bytes: Int64) { state.withLock { ($0.receivedPackets, $0.receivedBytes) } }

    /// Packets dropped for timestamps out of any sane range.
    public var droppedForTimestamps: Int64 { state.withLock { $0.droppedTimestamps } }

    /// Packets held for late-subscribing compositions (since the last keyframe).
    public var keyframeCacheCount: Int { state.withLock { $0.keyframeCache.count } }
}

/// A composition's view of a stage: the publishers on it, each with this composition's own
/// queue. `version` changes whenever someone joins or leaves.
public final class LiveStageSubscription: Sendable {
    public struct Entry: Sendable {
        public let publisher: LivePublisher
        public let queue: LiveMediaQueue
    }

    private struct State {
        var entries: [Entry] = []
        var version: UInt64 = 0
    }

    public let stageArn: String
    private let hub: LiveStageHub
    private let state = Mutex(State())

    init(hub: LiveStageHub, stageArn: String) {
        self.hub = hub
        self.stageArn = stageArn
    }

    public var version: UInt64 { state.withLock { $0.version } }

    /// The publishers now, in join order, and the version they belong to.
    public func snapshot() -> (version: UInt64, entries: [Entry]) {
        state.withLock { ($0.version, $0.entries) }
    }

    /// Stops receiving media (the composition ended).
    public func cancel() { hub.unsubscribe(self) }

    /// Something about a publisher changed (its attributes): the next snapshot is new.
    func touch() { state.withLock { $0.version &+= 1 } }

    func add(_ entry: Entry) {
        state.withLock {
            $0.entries.append(entry)
            $0.version &+= 1
        }
    }

    func remove(_ publisher: LivePublisher) {
        state.withLock {
            $0.entries.removeAll { $0.publisher === publisher }
            $0.version &+= 1
        }
    }

    func removeAll() -> [Entry] {
        state.withLock { state in
            let entries = state.entries
            state.entries.removeAll()
            state.version &+= 1
            return entries
        }
    }
}

/// A live publisher's jitter allowance (µs): what its media is shown with now, and how often
/// (and by how much in all) it stepped up for packets that came with less than its margin to
/// spare, each a held picture and a gap in the sound that long.
public struct LiveAllowance: Sendable, Equatable {
    public var latency: Int64
    public var steps: Int64
    public var steppedUp: Int64

    public init(latency: Int64, steps: Int64, steppedUp: Int64) {
        self.latency = latency
        self.steps = steps
        self.steppedUp = steppedUp
    }
}
