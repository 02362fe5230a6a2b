// The stage side of the session targets: a LiveStageHub on a manual clock with one
// subscribed composition, whose queues are drained and checked after every step.

import LiveStage
import MediaCore

final class FuzzStage {
    static let stageArn = "arn:aws:ivs:us-east-1:123456789012:stage/fuzzstage01"

    static let settings = LiveMediaSettings(latency: 200_000, queue: LiveQueueLimits(packets: 64, bytes: 1 << 20),
                                            keyframeCacheBytes: 256 << 10, keyframeCachePackets: 32)

    /// Queued decode times stay within this of the stage clock: latency plus the mapper's
    /// discontinuity threshold, with room to spare; presentation times within the bound plus
    /// the largest B-frame delay the forwarder lets through (5 s).
    static let timelineBound: Int64 = 5_000_000
    static let presentationBound: Int64 = timelineBound + 5_000_000

    let clock = ManualMediaClock()
    let hub: LiveStageHub
    private let subscription: LiveStageSubscription
    /// Media packets taken from the composition's queues so far.
    private(set) var mediaPackets = 0

    init() {
        hub = LiveStageHub(clock: clock, settings: Self.settings)
        subscription = hub.subscribe(stageArn: Self.stageArn)
    }

    /// Takes every queued packet, checking the bounds: queue and keyframe cache within their
    /// limits, and every timestamp near "now" (a publisher's timestamp jump re-anchors, and
    /// never reaches a composition).
    func drain() {
        let now = clock.now().microsecondsValue
        for entry in subscription.snapshot().entries {
            FuzzBound(entry.publisher.keyframeCacheCount <= Self.settings.keyframeCachePackets,
                      "keyframe cache holds \(entry.publisher.keyframeCacheCount) packets")
            let counters = entry.queue.counters
            FuzzBound(counters.queued <= Self.settings.queue.packets && counters.bytes <= Self.settings.queue.bytes,
                      "queue holds \(counters.queued) packets, \(counters.bytes) bytes")
            while case .packet(let packet) = entry.queue.pop() {
                guard case .data = packet.content else { continue }
                mediaPackets += 1
                FuzzBound(abs(packet.dts - now) <= Self.timelineBound && abs(packet.pts - now) <= Self.presentationBound,
                          "packet at dts \(packet.dts) pts \(packet.pts) with the stage clock at \(now)")
            }
        }
    }

    func close() { subscription.cancel() }
}
