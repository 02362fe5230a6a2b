// Participant replication: a publisher of a source stage appears as a publisher on a
// destination stage. A thread per replica takes the source publisher's media from a queue of
// its own (LivePublisher.makeQueue, as compositions and recordings do) and pushes it, as it
// came, into the replica's LivePublisher on the destination stage: the destination composes
// and records it like any publisher, through the one media path; nothing is decoded here.
//
// When the source leaves, the replica waits `reconnectWindowSeconds` for it to come back (a
// new connection of the same participant on the source stage), then ends.
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
            outer: while !self.stopped.load(ordering: .acquiring) {
                let queue = current.makeQueue()
                while !self.stopped.load(ordering: .acquiring) {
                    switch queue.pop() {
                    case .packet(let packet):
                        switch packet.content {
                        case .configuration(let configuration): replica.announce(configuration)
                        case .data(let bytes):
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
                            if let next = hub.publishers(stageArn: current.stageArn)
                                .first(where: { $0.identity.participantId == current.identity.participantId
                                           && $0.generation != current.generation && !$0.hasEnded }) {
                                current = next
                                logger.info("replicated participant reconnected to its source stage")
                                continue outer
                            }
                            Thread.sleep(forTimeInterval: 0.05)
                        }
                        reason = "the source participant left its stage"
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
}
