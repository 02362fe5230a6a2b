// From FLV tag payloads to a live publisher's stream setups and packets: which codec, which
// configuration record, which timestamps. Pure apart from the publisher it feeds, so every
// case (legacy and Enhanced RTMP, B-frames, codec changes, garbage) is a unit test.

public import LiveStage
public import MediaCore
public import RTMP

/// What the connection must do after forwarding one message.
public enum ForwardOutcome: Equatable, Sendable {
    case forwarded
    /// Nothing to forward (metadata-only packets, end of sequence, before any setup).
    case ignored
    /// The publisher sent what we cannot take: report it and disconnect.
    case reject(IngestPublishError, reason: String)
}

public struct RTMPMediaForwarder: Sendable {
    public private(set) var videoSetup: CodecConfiguration?
    public private(set) var audioSetup: CodecConfiguration?
    /// A bounded count of frames dropped because no setup had arrived yet (for logs).
    public private(set) var framesBeforeSetup = 0
    /// Timestamp jumps of more than a minute (RTMPTimestampUnwrapper) so far. An encoder
    /// restart makes one; a publisher that keeps making them sends nonsense and is rejected.
    public private(set) var timestampDiscontinuities = 0
    public static let maxTimestampDiscontinuities = 10
    /// A frame's presentation delay after its decode time (FLV CompositionTime, B-frames):
    /// real encoders stay well under a second; the field allows ±2.3 hours. Beyond ±5 s it is
    /// clamped (and counted), so no frame is presented at a time no composition reaches.
    public static let maxCompositionOffsetMs: Int32 = 5_000
    public private(set) var compositionOffsetsClamped = 0

    /// The codecs the compositions can decode (the daemon asks FFmpeg); a setup in any other
    /// is refused at once, not discovered by every composition's decoder.
    public let decodable: Set<CompressedCodec>

    public init(decodable: Set<CompressedCodec> = Set(CompressedCodec.allCases)) {
        self.decodable = decodable
    }

    /// Parses one audio (8) or video (9) message and hands its content to `publisher`.
    /// `timestamp` is the message's unwrapped RTMP timestamp (ms).
    public mutating func forward(_ message: RTMPMediaMessage, to publisher: LivePublisher) -> ForwardOutcome {
        let packet: FLVMediaPacket
        let isVideo = message.kind == .video
        do {
            packet = isVideo ? try FLVMediaPacket.parseVideo(message.payload) : try FLVMediaPacket.parseAudio(message.payload)
        } catch {
            return .reject(.invalidInput, reason: "malformed \(isVideo ? "video" : "audio") tag: \(error)")
        }
        if message.isDiscontinuity {
            timestampDiscontinuities += 1
            if timestampDiscontinuities > Self.maxTimestampDiscontinuities {
                return .reject(.invalidInput, reason: "timestamps jumped by more than a minute \(timestampDiscontinuities) times")
            }
        }
        // Bounded by the unwrapper, but never trusted: an overflow is a rejection, not a trap.
        let (micros, overflow) = message.timestamp.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return .reject(.invalidInput, reason: "timestamp \(message.timestamp) ms out of range") }
        switch packet {
        case .videoConfig(let codec, let record):
            guard let compressed = Self.codec(for: codec), decodable.contains(compressed) else {
                return .reject(.invalidVideoCodec, reason: "video codec \(codec) cannot be decoded")
            }
            var setup = CodecConfiguration(codec: compressed, extradata: record)
            if compressed == .h264, let sps = try? AVCDecoderConfigurationRecord(parsing: record).firstSequenceParameterSet() {
                setup.width = sps.width
                setup.height = sps.height
            }
            if setup != videoSetup {
                videoSetup = setup
                publisher.announce(setup)
            }
            return .forwarded
        case .videoFrame(let codec, let isKeyframe, let compositionTimeMs, let data):
            guard let setup = videoSetup, Self.codec(for: codec) == setup.codec else {
                framesBeforeSetup += 1
                return .ignored
            }
            let limit = Self.maxCompositionOffsetMs
            let offsetMs = min(max(compositionTimeMs, -limit), limit)
            if offsetMs != compositionTimeMs { compositionOffsetsClamped &+= 1 }
            publisher.push(.video, data: data, timestamp: micros, compositionOffset: Int64(offsetMs) &* 1000,
                           isKeyframe: isKeyframe)
            return .forwarded
        case .audioConfig(let codec, let config):
            guard let compressed = Self.codec(for: codec), decodable.contains(compressed) else {
                return .reject(.invalidAudioCodec, reason: "audio codec \(codec) cannot be decoded")
            }
            var setup = CodecConfiguration(codec: compressed, extradata: config)
            if compressed == .aac, let info = try? AACAudioSpecificConfig(parsing: config) {
                setup.sampleRate = info.sampleRate
                setup.channelCount = info.channels ?? 0
            }
            if setup != audioSetup {
                audioSetup = setup
                publisher.announce(setup)
            }
            return .forwarded
        case .audioFrame(let codec, let data, let sampleRate, let channels):
            guard let compressed = Self.codec(for: codec), decodable.contains(compressed) else {
                return .reject(.invalidAudioCodec, reason: "audio codec \(codec) cannot be decoded")
            }
            if audioSetup?.codec != compressed {
                // Codecs without a sequence header (MP3) are set up by their first frame.
                guard compressed != .aac else {
                    framesBeforeSetup += 1
                    return .ignored
                }
                let setup = CodecConfiguration(codec: compressed, sampleRate: sampleRate ?? 0, channelCount: channels ?? 0)
                audioSetup = setup
                publisher.announce(setup)
            }
            publisher.push(.audio, data: data, timestamp: micros, isKeyframe: true)
            return .forwarded
        case .videoEndOfSequence, .ignored:
            return .ignored
        case .unsupported(let what):
            return .reject(isVideo ? .invalidVideoCodec : .invalidAudioCodec, reason: what)
        }
    }

    static func codec(for codec: FLVVideoCodec) -> CompressedCodec? {
        switch codec {
        case .avc: .h264
        case .hevc: .hevc
        case .av1: .av1
        case .vp9: .vp9
        }
    }

    static func codec(for codec: FLVAudioCodec) -> CompressedCodec? {
        switch codec {
        case .aac: .aac
        case .mp3: .mp3
        }
    }
}

/// Messages per second a connection may send: an encoder sends tens (video frames, audio
/// frames, a few commands); a peer flooding empty or ignored messages costs CPU without
/// costing bytes, so the count is held to a sustained average and a burst per second.
public struct MessageRateLimit: Sendable {
    public let sustainedPerSecond: Int64
    public let burstPerSecond: Int64
    private var window = BitrateWindow()
    private var second: Int64?
    private var inSecond: Int64 = 0

    public init(sustainedPerSecond: Int64 = 1_000, burstPerSecond: Int64 = 5_000) {
        self.sustainedPerSecond = sustainedPerSecond
        self.burstPerSecond = burstPerSecond
    }

    /// Adds `count` messages received at `now` (µs); the reason to disconnect when over.
    public mutating func add(_ count: Int64, now: Int64) -> String? {
        guard count > 0 else { return nil }
        let current = now / 1_000_000
        if second != current {
            second = current
            inSecond = 0
        }
        inSecond &+= count
        if inSecond > burstPerSecond { return "\(inSecond) messages within one second (at most \(burstPerSecond))" }
        // The window counts bytes as bits/8: one "byte" per message gives messages × 8 per second.
        if let rate = window.add(Int(clamping: count), now: now), rate / 8 > sustainedPerSecond {
            return "\(rate / 8) messages per second averaged over 5 s (at most \(sustainedPerSecond))"
        }
        return nil
    }
}
