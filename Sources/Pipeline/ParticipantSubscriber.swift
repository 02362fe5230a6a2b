// One publisher's media, pulled on demand by the composition clock: demux, decode, map
// timestamps onto the stage clock. Video keeps the latest frame at or before the clock and
// the next one after it; audio is decoded, resampled to the mix format and parked in an
// AudioRing by stage sample position. Errors mid-stream end this participant's media only.

public import FFmpeg
public import Logging
public import MediaCore
public import Layout

public final class ParticipantSubscriber {
    public let participantId: String
    public let mixRate: Int
    private let demuxer: Demuxer
    private let videoDecoder: Decoder?
    private let audioDecoder: Decoder?
    private let resampler = Resampler()
    private let logger: Logger
    /// Stage microseconds at which the media's first timestamp plays.
    private let offsetMicroseconds: Int64
    private let fileStart: Int64

    // Video: `current` is shown; `pending` is the next frame, not due yet.
    public let current = Frame()
    private let pending = Frame()
    private let decoded = Frame()
    /// Clockwise quarter turns that put the picture upright (display-matrix metadata).
    private var rotationTurns = 0
    public private(set) var currentTime: Int64?
    private var pendingTime: Int64?
    private var videoMapper: TimestampMapper
    private var lastVideoSourceTime: Int64?
    /// Video packets read while looking for audio, waiting for the video decoder (bounded).
    private var videoPackets: [Packet] = []
    static let maxQueuedVideoPackets = 300
    private var warnedInterleave = false
    private var videoPacketPool: [Packet] = []
    private var videoDrained = false
    private var videoDecoderEnded = false
    private let frameStep: Int64

    // Audio.
    public let audio: AudioRing
    private var audioMapper: TimestampMapper
    private var audioNextPosition: Int64?
    private let scratchLeft: UnsafeMutablePointer<Float>
    private let scratchRight: UnsafeMutablePointer<Float>
    private let scratchCapacity = 48_000
    private let decodedAudio = Frame()

    private let readPacket = Packet()
    public private(set) var endOfMedia = false
    public private(set) var failure: String?
    /// Video is above 1080p: rendered as audio-only (SPEC §4), and not decoded at all.
    public private(set) var videoTooLarge = false
    /// Stage time after which the media has no more video.
    public private(set) var videoEndTime: Int64?

    public var hasVideoStream: Bool { videoDecoder != nil }

    /// Stage time (µs) at which this participant's media ends, when the container knows.
    public var mediaEndTime: Int64? { demuxer.durationMicroseconds.map { offsetMicroseconds + $0 } }

    public init(participantId: String, mediaPath: String, offset: MediaTime, mixRate: Int = 48_000,
                limits: DecoderLimits = DecoderLimits(), logger: Logger) throws(FFmpegError) {
        self.participantId = participantId
        self.mixRate = mixRate
        self.logger = logger
        demuxer = try Demuxer(url: mediaPath)
        offsetMicroseconds = offset.microsecondsValue
        fileStart = demuxer.startTimeMicroseconds ?? 0
        let videoStream = demuxer.bestStream(.video)
        let audioStream = demuxer.bestStream(.audio)
        if let videoStream, ParticipantSubscriber.isAbove1080p(width: videoStream.width, height: videoStream.height) {
            videoTooLarge = true
            videoDecoder = nil
        } else if let videoStream {
            // The display matrix gives counter-clockwise degrees; turn the other way.
            rotationTurns = ((Int((Double(-videoStream.rotationDegrees) / 90).rounded()) % 4) + 4) % 4
            // Frame threads let decoding overlap the compositor and the encoder; the extra
            // frame of decoder delay does not matter in a pull model.
            var videoLimits = limits
            videoLimits.threads = limits.videoThreads
            videoDecoder = try Decoder(demuxer: demuxer, stream: videoStream, limits: videoLimits)
        } else {
            videoDecoder = nil
        }
        let demuxer = self.demuxer
        audioDecoder = try audioStream.map { (stream) throws(FFmpegError) in try Decoder(demuxer: demuxer, stream: stream, limits: limits) }
        frameStep = 33_333
        videoMapper = TimestampMapper(offset: offsetMicroseconds - fileStart)
        audioMapper = TimestampMapper(offset: offsetMicroseconds - fileStart)
        audio = AudioRing(capacity: mixRate * 10)
        scratchLeft = .allocate(capacity: scratchCapacity)
        scratchRight = .allocate(capacity: scratchCapacity)
        if videoDecoder == nil { videoDrained = true; videoDecoderEnded = true }
    }

    deinit {
        scratchLeft.deallocate()
        scratchRight.deallocate()
    }

    /// IVS renders publishers above 1080p as audio-only. Portrait 1080x1920 is still 1080p.
    public static func isAbove1080p(width: Int, height: Int) -> Bool {
        min(width, height) > 1080 || max(width, height) > 1920
    }

    /// The size of the current video frame, if any.
    public var currentVideoSize: PixelSize? {
        guard currentTime != nil, current.hasData else { return nil }
        return PixelSize(width: current.width, height: current.height)
    }

    // MARK: Video

    /// Makes `current` the latest frame whose stage time is ≤ `stageTime` (µs).
    public func advanceVideo(to stageTime: Int64) {
        guard videoDecoder != nil else { return }
        while true {
            if let due = pendingTime {
                // The first picture often starts a few ms after the audio (containers shift
                // video by the AAC priming): show it at once rather than flash camera-off.
                guard due <= stageTime || (currentTime == nil && due - stageTime < frameStep) else { return }
                current.swap(with: pending)
                currentTime = due
                pendingTime = nil
            }
            guard decodeNextVideoFrame() else { return }
        }
    }

    /// Decodes the next video frame into `pending`. False at the end of the video.
    private func decodeNextVideoFrame() -> Bool {
        guard let decoder = videoDecoder, !videoDecoderEnded else { return false }
        while true {
            let result: ReceiveResult
            do {
                result = try decoder.receive(into: decoded)
            } catch {
                logger.warning("video decode error; skipping", metadata: ["participant.id": "\(participantId)", "error": "\(error)"])
                continue
            }
            switch result {
            case .frame:
                if rotationTurns != 0, decoded.isYUV420P {
                    do {
                        try decoded.rotated(clockwiseQuarterTurns: rotationTurns, into: pending)
                    } catch {
                        logger.warning("rotate failed", metadata: ["participant.id": "\(participantId)", "error": "\(error)"])
                        continue
                    }
                } else {
                    pending.take(from: decoded)
                }
                let size = PixelSize(width: pending.width, height: pending.height)
                if ParticipantSubscriber.isAbove1080p(width: size.width, height: size.height) {
                    if !videoTooLarge {
                        logger.warning("video above 1080p; rendering audio-only", metadata: ["participant.id": "\(participantId)", "size": "\(size)"])
                    }
                    videoTooLarge = true
                    continue
                }
                videoTooLarge = false
                let micro = pending.bestEffortTimestamp.map { decoder.stream.timeBase.rescale($0, to: MediaTime.microseconds) }
                    ?? (lastVideoSourceTime.map { $0 + frameStep } ?? fileStart)
                lastVideoSourceTime = micro
                pendingTime = videoMapper.map(micro, nominalStep: frameStep)
                return true
            case .endOfStream:
                videoDecoderEnded = true
                videoEndTime = (currentTime ?? offsetMicroseconds) + frameStep
                return false
            case .needsInput:
                if let packet = nextVideoPacket() {
                    sendVideo(packet, decoder: decoder)
                    recycle(packet)
                } else if !videoDrained {
                    videoDrained = true
                    _ = try? decoder.send(nil)
                } else {
                    videoDecoderEnded = true
                    videoEndTime = (currentTime ?? offsetMicroseconds) + frameStep
                    return false
                }
            }
        }
    }

    private func sendVideo(_ packet: Packet, decoder: Decoder) {
        do {
            _ = try decoder.send(packet)
        } catch {
            logger.debug("video packet rejected", metadata: ["participant.id": "\(participantId)", "error": "\(error)"])
        }
    }

    private func nextVideoPacket() -> Packet? {
        while videoPackets.isEmpty {
            guard readOne() else { return nil }
        }
        return videoPackets.removeFirst()
    }

    private func recycle(_ packet: Packet) {
        packet.unref()
        if videoPacketPool.count < 64 { videoPacketPool.append(packet) }
    }

    // MARK: Audio

    /// Decodes until the audio ring holds samples up to `position` (exclusive), or the media ends.
    public func advanceAudio(to position: Int64) {
        guard audioDecoder != nil else { return }
        while !endOfMedia, audio.end < position || audioNextPosition == nil {
            // Stop pulling if this media has not started by then.
            if audioNextPosition == nil, Int64(mixRate) * offsetMicroseconds / 1_000_000 > position { return }
            // Badly interleaved media: never queue more than a few seconds of video to reach
            // audio; this participant's audio is short (silence) until video catches up.
            if videoPackets.count >= ParticipantSubscriber.maxQueuedVideoPackets {
                if !warnedInterleave {
                    warnedInterleave = true
                    logger.warning("media badly interleaved; audio waits for video", metadata: ["participant.id": "\(participantId)"])
                }
                return
            }
            guard readOne() else { return }
        }
    }

    private func decodeAudio(_ packet: Packet, decoder: Decoder) {
        do {
            var sent = try decoder.send(packet)
            while true {
                switch try decoder.receive(into: decodedAudio) {
                case .frame:
                    parkAudio(decoder: decoder)
                case .needsInput, .endOfStream:
                    if sent == .outputFull { sent = try decoder.send(packet); continue }
                    return
                }
            }
        } catch {
            logger.debug("audio packet rejected", metadata: ["participant.id": "\(participantId)", "error": "\(error)"])
        }
    }

    private func parkAudio(decoder: Decoder) {
        let samples: Int
        do {
            samples = try resampler.convert(decodedAudio, left: scratchLeft, right: scratchRight, capacity: scratchCapacity)
        } catch {
            logger.warning("audio resample error", metadata: ["participant.id": "\(participantId)", "error": "\(error)"])
            return
        }
        guard samples > 0 else { return }
        let stepMicro = Int64(decodedAudio.sampleCount) * 1_000_000 / Int64(max(decodedAudio.sampleRate, 1))
        var position: Int64
        if let raw = decodedAudio.bestEffortTimestamp {
            let micro = decoder.stream.timeBase.rescale(raw, to: MediaTime.microseconds)
            let stage = audioMapper.map(micro, nominalStep: stepMicro)
            position = stage * Int64(mixRate) / 1_000_000
        } else {
            position = audioNextPosition ?? Int64(mixRate) * offsetMicroseconds / 1_000_000
        }
        // Keep audio contiguous unless it drifts by more than 20 ms (then resync).
        if let expected = audioNextPosition, abs(position - expected) <= Int64(mixRate / 50) {
            position = expected
        }
        audio.write(left: scratchLeft, right: scratchRight, count: samples, at: position)
        audioNextPosition = position + Int64(samples)
    }

    // MARK: Demux

    /// Reads one packet: audio is decoded at once; video is queued for `decodeNextVideoFrame`.
    /// False at end of media (or on a read error, which ends this participant's media).
    private func readOne() -> Bool {
        guard !endOfMedia else { return false }
        let result: ReadResult
        do {
            result = try demuxer.read(into: readPacket)
        } catch {
            failure = error.description
            logger.warning("media read error; ending this participant's media", metadata: ["participant.id": "\(participantId)", "error": "\(error)"])
            finishMedia()
            return false
        }
        if result == .endOfFile {
            finishMedia()
            return false
        }
        if let video = videoDecoder, readPacket.streamIndex == video.stream.index {
            let packet = videoPacketPool.popLast() ?? Packet()
            readPacket.move(into: packet)
            videoPackets.append(packet)
        } else if let audioDecoder, readPacket.streamIndex == audioDecoder.stream.index {
            decodeAudio(readPacket, decoder: audioDecoder)
        }
        return true
    }

    private func finishMedia() {
        endOfMedia = true
        if let audioDecoder {
            _ = try? audioDecoder.send(nil)
            while (try? audioDecoder.receive(into: decodedAudio)) == .frame { parkAudio(decoder: audioDecoder) }
        }
    }
}
