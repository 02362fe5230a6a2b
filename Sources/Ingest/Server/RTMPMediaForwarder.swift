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
    /// The video setup the publisher was given last (the shown track's).
    public private(set) var videoSetup: CodecConfiguration?
    /// Each video track's setup (E-RTMP multitrack; a plain stream is track 0).
    public private(set) var tracks: [UInt8: CodecConfiguration] = [:]
    /// The track the publisher's consumers get; another is switched to at its keyframe.
    public private(set) var shownTrack: UInt8?
    /// The consumers get the smallest track that covers their tiles (false: the largest).
    public var fitsTiles = true
    /// Video tracks one connection may set up (OBS sends up to five renditions).
    public static let maxTracks = 8
    private var shownChanged = false
    /// A multitrack message has come (the shown track is then worth a log line).
    public private(set) var isMultitrack = false
    /// No video frame has reached the publisher yet: the first track shown (the first set
    /// up) gives way to the one the consumers want, whose keyframe then goes first.
    private var noFrameYet = true
    /// When the shown track last had a frame (µs of the publisher's clock): a track that stops
    /// while others go on (an encoder dropping a rendition) gives way at another's keyframe.
    private var shownFrameAt: Int64?
    /// A shown track silent this long, while another sends, is replaced (µs).
    public static let stoppedTrackAfter: Int64 = 1_000_000
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
        case .videoConfig, .videoFrame:
            return forwardVideo(FLVTrackPacket(track: 0, packet: packet), micros: micros, to: publisher)
        case .multitrackVideo(let parts):
            isMultitrack = true
            var outcome = ForwardOutcome.ignored
            for part in parts {
                switch forwardVideo(part, micros: micros, to: publisher) {
                case .forwarded: outcome = .forwarded
                case .ignored: continue
                case .reject(let code, let reason): return .reject(code, reason: reason)
                }
            }
            return outcome
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

    /// One track's setup or frame. The shown track's frames reach the publisher; when its
    /// consumers want another (`track(for:among:)`), that one is shown from its next keyframe.
    private mutating func forwardVideo(_ part: FLVTrackPacket, micros: Int64, to publisher: LivePublisher) -> ForwardOutcome {
        let track = part.track
        switch part.packet {
        case .videoConfig(let codec, let record):
            guard let compressed = Self.codec(for: codec), decodable.contains(compressed) else {
                return .reject(.invalidVideoCodec, reason: "video codec \(codec) cannot be decoded")
            }
            guard tracks[track] != nil || tracks.count < Self.maxTracks else {
                return .reject(.invalidInput, reason: "more than \(Self.maxTracks) video tracks")
            }
            var setup = CodecConfiguration(codec: compressed, extradata: record)
            if compressed == .h264, let sps = try? AVCDecoderConfigurationRecord(parsing: record).firstSequenceParameterSet() {
                setup.width = sps.width
                setup.height = sps.height
            }
            tracks[track] = setup
            if shownTrack == nil { show(track) }
            if track == shownTrack, setup != videoSetup {
                videoSetup = setup
                publisher.announce(setup)
            }
            return .forwarded
        case .videoFrame(let codec, let isKeyframe, let compositionTimeMs, let data):
            guard let setup = tracks[track], Self.codec(for: codec) == setup.codec else {
                framesBeforeSetup += 1
                return .ignored
            }
            if track != shownTrack {
                // Another track is wanted, or the shown one stopped: shown from this keyframe on.
                let stopped = shownFrameAt.map { micros &- $0 > Self.stoppedTrackAfter } ?? false
                guard isKeyframe, tracks.count > 1,
                      stopped || Self.track(for: publisher.videoDemand, among: tracks, fitsTiles: fitsTiles) == track else {
                    return .ignored
                }
                show(track)
                if setup != videoSetup {
                    videoSetup = setup
                    publisher.announce(setup)
                }
            } else if noFrameYet, tracks.count > 1,
                      let wanted = Self.track(for: publisher.videoDemand, among: tracks, fitsTiles: fitsTiles), wanted != track {
                // Shown only because it was set up first: the wanted track starts instead.
                return .ignored
            }
            noFrameYet = false
            shownFrameAt = micros
            let limit = Self.maxCompositionOffsetMs
            let offsetMs = min(max(compositionTimeMs, -limit), limit)
            if offsetMs != compositionTimeMs { compositionOffsetsClamped &+= 1 }
            publisher.push(.video, data: data, timestamp: micros, compositionOffset: Int64(offsetMs) &* 1000,
                           isKeyframe: isKeyframe)
            return .forwarded
        case .videoEndOfSequence, .ignored:
            return .ignored
        case .unsupported(let what):
            return .reject(.invalidVideoCodec, reason: what)
        case .multitrackVideo, .audioConfig, .audioFrame:
            return .reject(.invalidInput, reason: "a multitrack video message holds video only")
        }
    }

    private mutating func show(_ track: UInt8) {
        shownTrack = track
        shownChanged = true
    }

    /// The track shown since the last call, once, for a multitrack publisher (for the
    /// connection's log).
    public mutating func takeShownTrack() -> (track: UInt8, setup: CodecConfiguration)? {
        guard shownChanged, isMultitrack, !noFrameYet, let track = shownTrack, let setup = tracks[track] else { return nil }
        shownChanged = false
        return (track, setup)
    }

    /// The track for consumers that need `demand`: the smallest that covers it, the largest
    /// when one wants the largest or none covers it, the smallest when nobody shows it
    /// (`fitsTiles` false: always the largest). Ties go to the lower track ID.
    public static func track(for demand: LiveVideoDemand, among tracks: [UInt8: CodecConfiguration], fitsTiles: Bool) -> UInt8? {
        let sized = tracks.sorted { a, b in
            let areaA = a.value.width &* a.value.height, areaB = b.value.width &* b.value.height
            return areaA != areaB ? areaA < areaB : a.key < b.key
        }
        guard let largest = sized.last?.key else { return nil }
        guard fitsTiles else { return largest }
        switch demand {
        case .largest: return largest
        case .none: return sized.first?.key
        case .atLeast(let width, let height):
            return sized.first { $0.value.width >= width && $0.value.height >= height }?.key ?? largest
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
