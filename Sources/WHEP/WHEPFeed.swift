// A composition's output for WHEP viewers: its one H.264 encode, packetized once per frame
// (RFC 6184), and its mix once more as Opus, each handed to every viewer's outlet. It adds
// no video encode: a viewer that joins or loses a picture asks the composition for a
// keyframe (at most one a second for all of them). It runs on the composition thread; the
// outlets are shared with the transport, which drains them.

public import FFmpeg
public import MediaCore
public import Pipeline
import Synchronization
public import WebRTCMedia

public final class WHEPFeed: PacketSink, @unchecked Sendable {
    public let name: String
    /// Viewers at most (the endpoint refuses more).
    public let maxViewers: Int
    private let director: CompositionDirector?
    private let clock: @Sendable () -> Int64
    private let outlets = Mutex<[WHEPViewerOutlet]>([])
    /// The outlets as the composition thread last saw them (no lock per frame for the list).
    private var snapshot: [WHEPViewerOutlet] = []
    private let generation = Atomic<UInt64>(0)
    private var seenGeneration: UInt64 = 0
    // Composition thread only.
    private var videoPacketizer = H264Packetizer()
    private var videoFormat: H264AccessUnitFormat = .annexB
    private var videoTimeBase = Rational(1, 90_000)
    private var audioPacketizer = OpusPacketizer()
    private var bytes: [UInt8] = []
    /// The composition time (µs) of the first frame and the clock's time then: every
    /// viewer's sender reports are anchored on it.
    private var epoch: (media: Int64, time: Int64)?

    private func epoch(at pts: MediaTime, now: Int64) -> (media: Int64, time: Int64) {
        if let epoch { return epoch }
        let first = (media: pts.microsecondsValue, time: now)
        epoch = first
        return first
    }
    /// Access units that could not be packetized (malformed; never expected from our encoder).
    public private(set) var packetizingFailures = 0

    /// Called after each frame handed to the viewers (the transport sends what is due).
    private let wake: @Sendable () -> Void
    private let parameterSets = Mutex<[UInt8]?>(nil)

    /// `clock`: µs, the clock the transport polls the outlets on.
    public init(name: String, director: CompositionDirector?, maxViewers: Int = 50, clock: @escaping @Sendable () -> Int64,
                wake: @escaping @Sendable () -> Void = {}) {
        self.name = name
        self.director = director
        self.maxViewers = maxViewers
        self.clock = clock
        self.wake = wake
    }

    /// The encoder's sequence parameter set (header byte first), once it has started: what
    /// the viewers' answers declare.
    public var sequenceParameterSet: [UInt8]? { parameterSets.withLock { $0 } }

    /// Whether the composition's output has ended (no viewer can join).
    public var isEnded: Bool { ended.load(ordering: .acquiring) }

    public enum AdmissionError: Error, Equatable { case full(limit: Int), ended }

    private let ended = Atomic<Bool>(false)

    /// Adds a viewer; its first picture is a keyframe the composition is asked for now.
    public func add(_ outlet: WHEPViewerOutlet) throws(AdmissionError) {
        guard !ended.load(ordering: .acquiring) else { throw .ended }
        let added = outlets.withLock { list -> Bool in
            guard list.count < maxViewers else { return false }
            list.append(outlet)
            return true
        }
        guard added else { throw .full(limit: maxViewers) }
        generation.add(1, ordering: .releasing)
        director?.requestKeyframe()
    }

    public func remove(_ outlet: WHEPViewerOutlet) {
        outlet.end()
        outlets.withLock { list in list.removeAll { $0 === outlet } }
        generation.add(1, ordering: .releasing)
    }

    public var viewerCount: Int { outlets.withLock { $0.count } }

    /// A viewer asked for a keyframe (PLI, FIR).
    public func keyframeWanted() {
        director?.requestKeyframe()
    }

    private func currentOutlets() -> [WHEPViewerOutlet] {
        let now = generation.load(ordering: .acquiring)
        if now != seenGeneration {
            seenGeneration = now
            snapshot = outlets.withLock { $0 }
        }
        return snapshot
    }

    // MARK: PacketSink

    public func start(video: Encoder, audio: Encoder) throws(PipelineError) {
        videoTimeBase = video.timeBase
        let extradata = video.extradata
        if !extradata.isEmpty, let sets = try? H264ParameterSets(extradata: extradata) {
            videoPacketizer.setParameterSets(sets)
            videoFormat = sets.accessUnitFormat
            parameterSets.withLock { $0 = sets.sequenceParameterSets.first }
        }
    }

    public func write(_ packet: Packet, media: MediaType) throws(PipelineError) {
        guard media == .video else { return }
        let viewers = currentOutlets()
        guard !viewers.isEmpty else { return }
        bytes = packet.bytes
        do {
            let pts = MediaTime(ticks: packet.pts, timeBase: videoTimeBase)
            let frame = try videoPacketizer.packetize(bytes, format: videoFormat, pts: pts)
            let now = clock()
            let epoch = epoch(at: pts, now: now)
            var waiting = false
            for viewer in viewers where viewer.enqueue(frame, now: now, epoch: epoch) != .queued { waiting = true }
            // A viewer behind or waiting for a keyframe: ask for one (the composition spaces them).
            if waiting, !frame.isKeyframe { director?.requestKeyframe() }
            wake()
        } catch {
            packetizingFailures += 1
        }
    }

    public var wantsViewerAudio: Bool { !currentOutlets().isEmpty }

    public func writeViewerAudio(_ packet: Packet) throws(PipelineError) {
        let viewers = currentOutlets()
        guard !viewers.isEmpty else { return }
        do {
            let pts = MediaTime(ticks: packet.pts, timeBase: Rational(1, 48_000))
            let frame = try audioPacketizer.packetize(packet.bytes, pts: pts)
            let now = clock()
            let epoch = epoch(at: pts, now: now)
            for viewer in viewers { viewer.enqueue(frame, now: now, epoch: epoch) }
            wake()
        } catch {
            packetizingFailures += 1
        }
    }

    public func finish(failure: String?) throws(PipelineError) {
        close()
    }

    /// No more frames: every viewer's outlet ends (the transport then ends its session), and
    /// no viewer can join. Also when the composition ends before its pipeline started.
    public func close() {
        ended.store(true, ordering: .releasing)
        for outlet in outlets.withLock({ $0 }) { outlet.end() }
        wake()
    }
}
