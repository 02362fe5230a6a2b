// The RTMP connection shell in process: the real NIO handler in an EmbeddedChannel, driven
// with a recorded FFmpeg session and with hostile ones, on virtual time (the channel's loop
// and a manual stage clock move together). No socket, no daemon.
import Foundation
import IngestServer
import LiveStage
import Logging
import MediaCore
import NIOCore
import NIOEmbedded
import Synchronization
import Testing
import TestSupport

/// Admits every key onto one stage and records what the stage side hears.
final class RecordingAdmission: IngestAdmission {
    let hub: LiveStageHub
    let events = Mutex<[String]>([])

    init(hub: LiveStageHub) { self.hub = hub }

    func admit(_ request: IngestAdmissionRequest, disconnect: @escaping @Sendable (String) -> Void,
               decide: @escaping @Sendable (IngestAdmissionDecision) -> Void) {
        record("admit \(request.streamKey)")
        let publisher = hub.join(stageArn: ShellHarness.stageArn,
                                 identity: LiveParticipantIdentity(participantId: "p1", userId: "", attributes: [:]), disconnect: disconnect)
        decide(.accepted(Publication(publisher: publisher, admission: self)))
    }

    func record(_ event: String) { events.withLock { $0.append(event) } }

    struct Publication: IngestPublication {
        let publisher: LivePublisher
        let admission: RecordingAdmission
        func failed(_ error: IngestPublishError, reason: String) { admission.record("failed \(error.rawValue)") }
        func ended(reason: String) {
            admission.record("ended")
            publisher.leave()
        }
    }
}

struct ShellHarness {
    static let stageArn = "arn:aws:ivs:us-east-1:123456789012:stage/shellstage01"
    let clock = ManualMediaClock()
    let hub: LiveStageHub
    let admission: RecordingAdmission
    let channel = EmbeddedChannel()
    let subscription: LiveStageSubscription
    /// The connection's handler, to check it is released.
    let handler: AnyObject

    struct Reading: MediaClockReading {
        let clock: ManualMediaClock
        func nowMicroseconds() -> Int64 { clock.now().microsecondsValue }
    }

    init() throws {
        hub = LiveStageHub(clock: clock)
        admission = RecordingAdmission(hub: hub)
        subscription = hub.subscribe(stageArn: Self.stageArn)
        let handler = RTMPConnection.makeHandler(transport: .rtmp, admission: admission, policy: RTMPConnectionPolicy(),
                                                 clock: Reading(clock: clock), logger: Logger(label: "shell-test"))
        self.handler = handler as AnyObject
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.connect(to: SocketAddress(ipAddress: "192.0.2.9", port: 50_000)).wait()
    }

    /// Sends `bytes` in reads of `size`, `step` µs apart; returns the bytes the server sent
    /// and the media packets that reached the composition's queue.
    @discardableResult
    func send(_ bytes: [UInt8], size: Int, step: Int64) throws -> (replied: Int, media: Int) {
        var replied = 0, media = 0
        var offset = 0
        while offset < bytes.count, channel.isActive {
            let end = min(bytes.count, offset + size)
            try channel.writeInbound(channel.allocator.buffer(bytes: bytes[offset..<end]))
            offset = end
            channel.embeddedEventLoop.run()
            while let reply = try channel.readOutbound(as: ByteBuffer.self) { replied += reply.readableBytes }
            media += mediaPackets()
            advance(step)
        }
        return (replied, media)
    }

    func advance(_ microseconds: Int64) {
        clock.advance(by: .microseconds(microseconds))
        channel.embeddedEventLoop.advanceTime(by: .microseconds(microseconds))
    }

    /// Media packets (not setups) queued for the composition.
    func mediaPackets() -> Int {
        var count = 0
        for entry in subscription.snapshot().entries {
            while case .packet(let packet) = entry.queue.pop() {
                if case .data = packet.content { count += 1 }
            }
        }
        return count
    }
}

struct RTMPConnectionShellTests {
    static func corpus(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: FuzzSeeds.corpusRoot.appendingPathComponent("rtmp-parsers/\(name)")))
    }

    @Test("a recorded FFmpeg publish goes through the shell onto the stage; its unpublish ends it once")
    func recordedSession() throws {
        let harness = try ShellHarness()
        let (replied, media) = try harness.send(Self.corpus("ffmpeg-5.1-publish.bin"), size: 700, step: 10_000)
        #expect(replied > 3073)  // S0 S1 S2, then the command replies
        #expect(media >= 20)
        #expect(!harness.channel.isActive)
        let events = harness.admission.events.withLock { $0 }
        #expect(events.count == 2 && events.first?.hasPrefix("admit ") == true && events.last == "ended", "\(events)")
        #expect(harness.hub.publishers(stageArn: ShellHarness.stageArn).isEmpty)
    }

    @Test("the handler and its context are released when the connection closes (no leak per connection)")
    func handlerIsReleased() throws {
        weak var handler: AnyObject?
        do {
            let harness = try ShellHarness()
            handler = harness.handler
            try harness.send(Self.corpus("ffmpeg-5.1-publish.bin"), size: 4096, step: 0)
            #expect(!harness.channel.isActive)
        }
        #expect(handler == nil)
    }

    @Test("a flood of zero-length messages is a Publish Error (INVALID_INPUT) and closes the connection")
    func zeroLengthFlood() throws {
        let harness = try ShellHarness()
        let seed = [UInt8](try Data(contentsOf: FuzzSeeds.corpusRoot.appendingPathComponent("rtmp-session/seed-zero-length-flood-reads-137-0ms.bin")))
        try harness.send(Array(seed.dropFirst(2)), size: 137, step: 0)
        #expect(!harness.channel.isActive)
        #expect(harness.admission.events.withLock { $0 } == ["admit flood-key", "failed INVALID_INPUT", "ended"])
    }

    @Test("a connection that never publishes is closed at the publish deadline")
    func publishDeadline() throws {
        let harness = try ShellHarness()
        try harness.send(Array(try Self.corpus("ffmpeg-5.1-publish.bin").prefix(3073)), size: 3073, step: 0)
        harness.advance(9_000_000)
        harness.channel.embeddedEventLoop.run()
        #expect(harness.channel.isActive)
        harness.advance(1_100_000)
        harness.channel.embeddedEventLoop.run()
        #expect(!harness.channel.isActive)
        #expect(harness.admission.events.withLock { $0 }.isEmpty)
    }
}
