// Participant replication: a publisher of a source stage appears as a publisher on a
// destination stage. A thread per replica takes the source publisher's media from a queue of
// its own (LivePublisher.makeQueue, as compositions and recordings do) and pushes it, as it
// came, into the replica's LivePublisher on the destination stage: the destination composes
// and records it like any publisher, through the one media path; nothing is decoded here.
//
// When the source leaves, the replica waits `reconnectWindowSeconds` for it to come back (a
// new connection of the same participant on the source stage, never a replica), then ends.
// A forwarder whose timestamps stop advancing while packets keep coming (media going round
// in a loop of forwarders) stops itself and says why.
import Foundation
import LiveStage
import Logging
import Synchronization

final class ReplicaForwarder: Sendable {
    private let stopped = Atomic<Bool>(false)
    /// With nothing to forward, how long a wait lasts before the keyframe requests and the stop
    /// are looked at again (a packet ends it at once).
    static let idleWait = Duration.milliseconds(20)

    /// Starts forwarding; `ended` is called once, on the forwarding thread, when it stops.
    func start(source: LivePublisher, replica: LivePublisher, hub: LiveStageHub, window: TimeInterval, logger: Logger,
               ended: @escaping @Sendable (String) -> Void) {
        let thread = Thread { [self] in
            var current = source
            var reason = "stopped"
            var progress = ForwardProgress()
            let started = ContinuousClock.now
            outer: while !self.stopped.load(ordering: .acquiring) {
                let queue = current.makeQueue()
                while !self.stopped.load(ordering: .acquiring) {
                    switch queue.pop() {
                    case .packet(let packet):
                        switch packet.content {
                        case .configuration(let configuration): replica.announce(configuration)
                        case .data(let bytes):
                            if progress.forwarded(dts: packet.dts, at: ContinuousClock.now - started) {
                                reason = "its timestamps stopped advancing (\(progress.packetsSinceAdvance) packets without a later "
                                    + "one): media going round a loop of replicas"
                                logger.error("participant replication stopped: timestamps stopped advancing",
                                             metadata: ["packets": "\(progress.packetsSinceAdvance)"])
                                break outer
                            }
                            // Both stages run on the hub's clock: the source's placement stands
                            // (mapping it again would add a second latency and see a reconnect as a jump).
                            replica.pushStageTimed(packet.type, data: bytes, dts: packet.dts, pts: packet.pts, isKeyframe: packet.isKeyframe)
                        }
                    case .empty:
                        if replica.takeKeyframeRequest() { current.requestKeyframe() }
                        queue.waitForPacket(timeout: Self.idleWait)
                    case .ended:
                        current.release(queue)
                        // The source left: wait for it to come back within the window.
                        let deadline = Date().addingTimeInterval(window)
                        while Date() < deadline, !self.stopped.load(ordering: .acquiring) {
                            if let next = Self.reconnect(of: current, among: hub.publishers(stageArn: current.stageArn)) {
                                current = next
                                logger.info("replicated participant reconnected to its source stage")
                                continue outer
                            }
                            Thread.sleep(forTimeInterval: 0.05)
                        }
                        if !self.stopped.load(ordering: .acquiring) { reason = "the source participant left its stage" }
                        break outer
                    }
                }
                current.release(queue)
            }
            replica.leave()
            ended(reason)
        }
        thread.name = "participant-replica"
        thread.start()
    }

    func stop() { stopped.store(true, ordering: .releasing) }

    /// The source's new connection among a stage's publishers: the same participant on a
    /// new connection, live, and no replica (a replica of this participant made into the
    /// source's stage would otherwise feed this replica with its own media).
    static func reconnect(of source: LivePublisher, among publishers: [LivePublisher]) -> LivePublisher? {
        publishers.first { $0.identity.participantId == source.identity.participantId && $0.identity.replicaOf == nil
                           && $0.generation != source.generation && !$0.hasEnded }
    }
}

/// Whether forwarded media still moves forward in time: a replica's packets come with the
/// source's stage timestamps, which advance as long as the source is live. Packets that keep
/// coming without a later decode time than seen before, for long and for many, are media
/// going round in circles (a replica fed from itself), not a live source; a short replay of
/// the keyframe cache at a (re)connect is far below both bounds.
struct ForwardProgress {
    /// At least this many packets and this long without a later timestamp: stalled.
    static let stalledPackets = 300
    static let stalledAfter = Duration.seconds(3)

    private(set) var packetsSinceAdvance = 0
    private var latest: Int64?
    private var advancedAt: Duration = .zero

    /// One packet forwarded with decode time `dts` at `now` (any monotonic origin); true
    /// when the forwarding has stalled.
    mutating func forwarded(dts: Int64, at now: Duration) -> Bool {
        if let latest, dts <= latest {
            packetsSinceAdvance &+= 1
            return packetsSinceAdvance >= Self.stalledPackets && now - advancedAt >= Self.stalledAfter
        }
        latest = dts
        advancedAt = now
        packetsSinceAdvance = 0
        return false
    }
}
