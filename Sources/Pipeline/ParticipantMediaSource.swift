// Where one participant's compressed media comes from. A recorded stage reads a file
// (`DemuxerMediaSource`); a live stage drains the packets a publisher's connection queued.
// Both feed the same ParticipantSubscriber (decode → latest frame / audio ring on the stage
// clock), so recorded and live publishers share one media path.

public import FFmpeg
import Layout
public import MediaCore

/// What one `read` produced.
public enum MediaSourceRead: Equatable {
    /// A packet of the source's current video or audio stream is in the packet.
    case packet(MediaType)
    /// A stream appeared or its configuration changed; `stream(_:)` has the new setup and
    /// the packets that follow belong to it. Nothing was written into the packet.
    case streamChanged(MediaType)
    /// A live source has nothing queued right now (not an end).
    case wouldBlock
    /// No more media, ever.
    case endOfMedia
}

/// A stream's decoder setup: its description and the codec parameters to open it with.
public struct MediaStreamSetup {
    public var info: StreamInfo
    public var parameters: CodecParameters
    /// The configuration record a same-codec change should hand the running decoder
    /// (live only; nil means the decoder must be re-created).
    public var inBandExtradata: [UInt8]?

    public init(info: StreamInfo, parameters: CodecParameters, inBandExtradata: [UInt8]? = nil) {
        self.info = info
        self.parameters = parameters
        self.inBandExtradata = inBandExtradata
    }
}

public protocol ParticipantMediaSource: AnyObject {
    /// The current setup of the source's video or audio stream, if it has one.
    func stream(_ type: MediaType) -> MediaStreamSetup?
    /// Reads the next packet (timestamps in the stream's time base).
    func read(into packet: Packet) throws(FFmpegError) -> MediaSourceRead
    /// Timestamp (µs) of the media's first packet, when the container knows it.
    var startTimeMicroseconds: Int64? { get }
    /// Length of the media (µs), when known.
    var durationMicroseconds: Int64? { get }
    /// True for a live publisher: audio drift against the stage clock is absorbed by
    /// stretching the sound instead of by jumps.
    var isLive: Bool { get }
    /// The compositor now draws the picture this large (the least size of the current
    /// picture's aspect that is not upscaled into its tile), or not at all (nil). A live
    /// publisher with several sizes (simulcast) can then send the smallest that covers it.
    func drawnSizeChanged(_ size: PixelSize?)
}

extension ParticipantMediaSource {
    public func drawnSizeChanged(_ size: PixelSize?) {}
}

/// A recorded participant's file (any container FFmpeg reads).
public final class DemuxerMediaSource: ParticipantMediaSource {
    private let demuxer: Demuxer
    private let video: MediaStreamSetup?
    private let audio: MediaStreamSetup?

    public init(url: String) throws(FFmpegError) {
        demuxer = try Demuxer(url: url)
        let demuxer = self.demuxer
        video = try demuxer.bestStream(.video).map { (info) throws(FFmpegError) in
            MediaStreamSetup(info: info, parameters: try demuxer.parameters(of: info))
        }
        audio = try demuxer.bestStream(.audio).map { (info) throws(FFmpegError) in
            MediaStreamSetup(info: info, parameters: try demuxer.parameters(of: info))
        }
    }

    public func stream(_ type: MediaType) -> MediaStreamSetup? {
        switch type {
        case .video: video
        case .audio: audio
        case .other: nil
        }
    }

    public func read(into packet: Packet) throws(FFmpegError) -> MediaSourceRead {
        guard try demuxer.read(into: packet) == .packet else { return .endOfMedia }
        if packet.streamIndex == video?.info.index { return .packet(.video) }
        if packet.streamIndex == audio?.info.index { return .packet(.audio) }
        return .packet(.other)
    }

    public var startTimeMicroseconds: Int64? { demuxer.startTimeMicroseconds }
    public var durationMicroseconds: Int64? { demuxer.durationMicroseconds }
    public var isLive: Bool { false }
}

/// Several recordings of one participant played one after another, each from its own stage
/// time (a participant recorded again after its reconnect window had closed): one source, so
/// the participant keeps one subscriber and one tile. Timestamps of part `i` are shifted so
/// that its first one plays at `offsets[i]`, on the first part's timeline.
public final class SequentialMediaSource: ParticipantMediaSource {
    public struct Part {
        public var source: any ParticipantMediaSource
        /// Stage time (µs) at which the part's first timestamp plays.
        public var offsetMicroseconds: Int64

        public init(source: any ParticipantMediaSource, offsetMicroseconds: Int64) {
            self.source = source
            self.offsetMicroseconds = offsetMicroseconds
        }
    }

    private let parts: [Part]
    private var current = 0
    /// Setups of the new part not yet announced with `.streamChanged`.
    private var announce: [MediaType] = []

    /// `parts` in the order they play (non-empty).
    public init(parts: [Part]) {
        precondition(!parts.isEmpty, "a sequence of no media")
        self.parts = parts
    }

    public func stream(_ type: MediaType) -> MediaStreamSetup? { parts[current].source.stream(type) }

    public func read(into packet: Packet) throws(FFmpegError) -> MediaSourceRead {
        while true {
            if let type = announce.popLast() { return .streamChanged(type) }
            let part = parts[current]
            let result = try part.source.read(into: packet)
            switch result {
            case .endOfMedia:
                guard current + 1 < parts.count else { return .endOfMedia }
                current += 1
                announce = [MediaType.audio, .video].filter { parts[current].source.stream($0) != nil }
                continue
            case .packet(let type) where current > 0:
                guard let setup = part.source.stream(type) else { return result }
                // Shifts are bounded: offsets are manifest times (a week at most) and start
                // times come from the container, clamped here.
                let start = min(max(part.source.startTimeMicroseconds ?? 0, -Self.limit), Self.limit)
                let firstStart = min(max(parts[0].source.startTimeMicroseconds ?? 0, -Self.limit), Self.limit)
                let shiftMicro = part.offsetMicroseconds - parts[0].offsetMicroseconds + firstStart - start
                let shift = MediaTime.microseconds.rescale(shiftMicro, to: setup.info.timeBase)
                if packet.hasPTS { packet.pts = packet.pts.addingReportingOverflow(shift).partialValue }
                if packet.hasDTS { packet.dts = packet.dts.addingReportingOverflow(shift).partialValue }
                return result
            default:
                return result
            }
        }
    }

    private static let limit: Int64 = 1 << 50

    public var startTimeMicroseconds: Int64? { parts[0].source.startTimeMicroseconds }

    /// From the first part's start to the end of the last.
    public var durationMicroseconds: Int64? {
        guard let last = parts.last, let lastDuration = last.source.durationMicroseconds else { return nil }
        return last.offsetMicroseconds - parts[0].offsetMicroseconds + lastDuration
    }

    public var isLive: Bool { false }
}
