// An RTMP publisher that reached a node which does not own its stage. Encoders do not follow
// RTMP redirects, so this node keeps the connection, checks the key (admission did), and
// republishes the media as it came — no decode, no encode — to the owner's RTMP(S) listener
// with the same stream key: the owner admits it as the publisher. One thread per relay,
// never an event loop. The relay ends when the publisher leaves (the owner then sees the
// stream end), or when the owner's side fails (the publisher is then disconnected).
// A publisher's new sequence header (a resolution or sample-rate change) goes on to the owner
// with the next packet of its stream (FLV's muxer writes it as a new sequence header there),
// so the owner decodes every configuration the publisher sent, as it sent it.
import FFmpeg
import Foundation
import LiveStage
import Logging
import MediaCore
import Pipeline
import Synchronization

final class RTMPRelay: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let interrupt = IOInterrupt()

    /// How long the relay waits for both the audio and the video stream's setup before it
    /// opens the owner's side with what it has; at most this many packets are held meanwhile.
    static let setupWait: Int64 = 2_000_000
    static let maxHeldPackets = 512
    static let connectTimeout = MediaTime.seconds(10)
    /// A write to the owner that makes no progress this long ends the relay.
    static let stallTimeout = MediaTime.seconds(10)
    private static let microseconds = Rational(1, 1_000_000)

    /// Starts relaying `publisher`'s media to `url` (`rtmp[s]://owner:port/app/<stream key>`).
    /// `ended` is called once, from the relay's thread, with why it ended (nil: the publisher left).
    init(publisher: LivePublisher, url: String, displayURL: String, logger: Logger,
         ended: @escaping @Sendable (String?) -> Void) {
        let thread = Thread { [self] in
            let failure = self.relay(publisher, url: url, displayURL: displayURL, logger: logger)
            ended(failure)
        }
        thread.name = "rtmp-relay"
        thread.start()
    }

    /// The publisher left: what is queued is sent, then the owner's side is closed.
    func stop() { stopped.store(true, ordering: .releasing) }

    private func relay(_ publisher: LivePublisher, url: String, displayURL: String, logger: Logger) -> String? {
        let queue = publisher.makeQueue()
        defer { publisher.release(queue) }
        let source = LiveMediaSource(queue: queue, origin: 0, logger: logger)
        let scratch = Packet()
        // What the owner has been (or will be, at open) told of each stream, and the
        // configuration records still to pass on with the next packet of their stream.
        var setups: [MediaType: MediaStreamSetup] = [:]
        var changed: [MediaType: [UInt8]] = [:]
        var held: [(type: MediaType, packet: Packet)] = []
        var muxer: Muxer?
        var streams: [MediaType: Int] = [:]
        var origin: Int64?
        var waitingForKeyframe = true
        do {
            while true {
                let read = try source.read(into: scratch)
                switch read {
                case .wouldBlock:
                    if stopped.load(ordering: .acquiring) && muxer == nil && held.isEmpty { return nil }
                    queue.waitForPacket(timeout: .milliseconds(100))
                    continue
                case .endOfMedia:
                    if let muxer { _ = try muxer.finish() }
                    return nil
                case .streamChanged(let type):
                    guard let setup = source.stream(type) else { continue }
                    let told = muxer != nil || held.contains { $0.type == type }
                    if let known = setups[type], told {
                        // Said again, or changed: a change goes on with the stream's next packet.
                        let record = setup.parameters.extradata
                        if record != known.parameters.extradata { changed[type] = record } else { changed[type] = nil }
                    } else {
                        setups[type] = setup
                    }
                    continue
                case .packet(let type):
                    guard type != .other, let setup = source.stream(type) else { continue }
                    if setups[type] == nil { setups[type] = setup }
                    scratch.rescaleTimestamps(from: setup.info.timeBase, to: Self.microseconds)
                    if type == .video && waitingForKeyframe {
                        guard scratch.isKeyframe else { continue }
                        waitingForKeyframe = false
                    }
                    // The owner's timeline starts at 0 (FLV's times are 32-bit milliseconds).
                    let start = origin ?? scratch.dts
                    origin = start
                    scratch.dts = scratch.dts &- start
                    if scratch.hasPTS { scratch.pts = scratch.pts &- start }
                    guard scratch.dts >= 0 else { continue }
                    if let record = changed.removeValue(forKey: type) {
                        try scratch.attachNewExtradata(record)
                        if var known = setups[type] {
                            known.parameters = setup.parameters
                            setups[type] = known
                        }
                        logger.info("the publisher's stream setup changed; passed on to the stage's node",
                                    metadata: ["media.type": "\(type)", "media.setup.bytes": "\(record.count)"])
                    }
                    if let muxer, let stream = streams[type] {
                        interrupt.arm(timeout: Self.stallTimeout)
                        try muxer.write(scratch, stream: stream)
                        continue
                    }
                    held.append((type, scratch.reference()))
                    let span = (held.last?.packet.dts ?? 0) &- (held.first?.packet.dts ?? 0)
                    let ready = setups[.video] != nil && setups[.audio] != nil
                    guard ready || span >= Self.setupWait || held.count >= Self.maxHeldPackets else { continue }
                    let opened = try open(url: url, displayURL: displayURL, setups: setups)
                    muxer = opened.muxer
                    streams = opened.streams
                    logger.info("relaying the publisher to the stage's node", metadata: [
                        "relay.url": "\(displayURL)", "relay.streams": "\(streams.keys.map { "\($0)" }.sorted().joined(separator: ","))"])
                    for entry in held {
                        guard let stream = streams[entry.type] else { continue }
                        interrupt.arm(timeout: Self.stallTimeout)
                        try opened.muxer.write(entry.packet, stream: stream)
                    }
                    held = []
                }
            }
        } catch {
            interrupt.abort()
            return "relay to the stage's node (\(displayURL)) failed: \(error)"
        }
    }

    private func open(url: String, displayURL: String, setups: [MediaType: MediaStreamSetup]) throws(FFmpegError)
        -> (muxer: Muxer, streams: [MediaType: Int]) {
        interrupt.arm(timeout: Self.connectTimeout)
        defer { interrupt.disarm() }
        // Inside the fleet: the owner's certificate may be self-signed (FFmpeg verifies only when told).
        let muxer = try Muxer(format: "flv", url: url, interleaved: true, protocolOptions: ["tls_verify": "0"],
                              interrupt: interrupt, displayURL: displayURL)
        var streams: [MediaType: Int] = [:]
        for type in [MediaType.video, .audio] {
            guard let setup = setups[type] else { continue }
            streams[type] = try muxer.addStream(try StreamParameters(copying: setup.parameters, timeBase: Self.microseconds))
        }
        try muxer.writeHeader(options: ["flvflags": "no_duration_filesize"])
        return (muxer, streams)
    }
}
