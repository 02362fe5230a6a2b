// One RTMP publisher connection as the daemon runs it: the NIO connection handler (message
// rate and bitrate limits, admission, the publish deadline) in an EmbeddedChannel, the
// forwarder, and a LivePublisher on a stage with one subscribed composition, all on a manual
// clock. The input is the bytes the publisher sends; a two-byte header says how they are cut
// into reads and how much time passes between reads (0 ms: a flood).
//
// Checked after every read: what FuzzStage checks, and at the end that the stage heard the
// publisher leave exactly once.

import IngestServer
import LiveStage
import Logging
import MediaCore
import NIOCore
import NIOEmbedded
import RTMP
import Synchronization

enum RTMPSessionTarget {
    /// Small session limits so that short inputs reach them.
    static let policy = RTMPConnectionPolicy(
        limits: RTMPSessionLimits(
            chunk: RTMPChunkLimits(maxChunkSize: 8192, maxMessageLength: 65_536, maxAssemblingChunkStreams: 8,
                                   maxKnownChunkStreams: 16, maxBufferedPayloadBytes: 131_072),
            amf: AMF0Limits(maxNestingDepth: 8, maxValueCount: 256, maxStringBytes: 4096, maxContainerElements: 64),
            maxPendingMediaBytes: 32_768, maxMessageStreams: 4),
        publishDeadline: .seconds(10))

    static func run(_ input: [UInt8], logger: Logger = silentLogger) -> FuzzReach {
        var reader = FuzzReader(input)
        let pieceSize = 1 + Int(reader.byte()) &* 17
        let stepMicros = Int64(reader.byte()) &* 1000
        let stage = FuzzStage()
        defer { stage.close() }
        let clock = stage.clock
        let admission = FuzzAdmission(hub: stage.hub)
        let channel = EmbeddedChannel()
        let handler = RTMPConnection.makeHandler(transport: .rtmp, admission: admission, policy: policy,
                                                 clock: ClockReading(clock: clock), logger: logger)
        do {
            try channel.pipeline.syncOperations.addHandler(handler)
            try channel.connect(to: SocketAddress(ipAddress: "192.0.2.7", port: 50_000)).wait()
        } catch {
            fatalError("embedded channel: \(error)")
        }
        while !reader.isAtEnd, channel.isActive {
            let piece = reader.bytes(pieceSize)
            _ = try? channel.writeInbound(channel.allocator.buffer(bytes: piece))
            channel.embeddedEventLoop.run()
            while (try? channel.readOutbound(as: ByteBuffer.self)) ?? nil != nil {}
            stage.drain()
            clock.advance(by: .microseconds(stepMicros))
            channel.embeddedEventLoop.advanceTime(by: .microseconds(stepMicros))
        }
        _ = try? channel.finish()
        stage.drain()
        let (admitted, ended) = admission.counts
        FuzzBound(ended == admitted, "\(admitted) publications admitted, \(ended) ended")
        FuzzBound(stage.hub.publishers(stageArn: FuzzStage.stageArn).isEmpty, "a publisher stayed on the stage after its connection closed")
        return FuzzReach(accepted: admitted, mediaPackets: stage.mediaPackets)
    }
}

let silentLogger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })

private struct ClockReading: MediaClockReading {
    let clock: ManualMediaClock
    func nowMicroseconds() -> Int64 { clock.now().microsecondsValue }
}

/// Admits every stream key except those ending in "x" (so refusals are fuzzed too), and
/// counts what the stage side hears.
private final class FuzzAdmission: IngestAdmission {
    let hub: LiveStageHub
    private let state = Mutex((admitted: 0, ended: 0))

    init(hub: LiveStageHub) { self.hub = hub }

    var counts: (admitted: Int, ended: Int) { state.withLock { $0 } }

    func admit(_ request: IngestAdmissionRequest, disconnect: @escaping @Sendable (String) -> Void,
               decide: @escaping @Sendable (IngestAdmissionDecision) -> Void) {
        guard !request.streamKey.hasSuffix("x") else {
            decide(.refused(.invalidStreamKey, reason: "refused by the fuzz admission"))
            return
        }
        let publisher = hub.join(stageArn: FuzzStage.stageArn,
                                 identity: LiveParticipantIdentity(participantId: "fuzzparticipant", userId: "", attributes: [:]),
                                 disconnect: disconnect)
        state.withLock { $0.admitted += 1 }
        decide(.accepted(Publication(publisher: publisher, admission: self)))
    }

    func publicationEnded(_ publisher: LivePublisher) {
        state.withLock { $0.ended += 1 }
        publisher.leave()
    }

    struct Publication: IngestPublication {
        let publisher: LivePublisher
        let admission: FuzzAdmission
        func failed(_ error: IngestPublishError, reason: String) {}
        func ended(reason: String) { admission.publicationEnded(publisher) }
    }
}
