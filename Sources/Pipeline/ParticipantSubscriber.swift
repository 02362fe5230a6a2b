// One publisher's media, pulled on demand by the composition clock: read packets from the
// participant's media source (a file, or a live publisher's queue), decode, map timestamps
// onto the stage clock. Video keeps the latest frame at or before the clock and the next one
// after it; audio is decoded, resampled to the mix format and parked in an AudioRing by stage
// sample position. Errors mid-stream end this participant's media only. A live source may
// have nothing yet (the tick goes on without waiting) and may change codec setup mid-stream.

public import FFmpeg
public import Logging
public import MediaCore
import Layout

public final class ParticipantSubscriber {
    public let participantId: String
    public let mixRate: Int
    private let source: any ParticipantMediaSource
    /// The size last told to the source with `drawnSizeChanged`.
    private var drawnSize: PixelSize?
    private var drawnSizeTold = false
    private var videoDecoder: Decoder?
    private var audioDecoder: Decoder?
    private let limits: DecoderLimits
    private let resampler = Resampler()
    private let logger: Logger
    /// Stage microseconds at which the media's first timestamp plays.
    private let offsetMicroseconds: Int64
    private let fileStart: Int64
    /// Configuration records to hand the running decoders with their next packet.
    private var pendingVideoExtradata: [UInt8]?
    private var pendingAudioExtradata: [UInt8]?

    // Video: `current` is shown; `pending` is the next frame, not due yet.
    public let current = Frame()
    private let pending = Frame()
    private let decoded = Frame()
    /// Clockwise quarter turns that put the picture upright (display-matrix metadata).
    private var rotationTurns = 0
    public private(set) var currentTime: Int64?
    /// Counts the pictures `current` has held: unchanged means the same pixels as last tick.
    public private(set) var videoGeneration: UInt64 = 0
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
    /// Whether a first picture due within a frame is shown at once (see `advanceVideo`).
    private let firstPictureEarly: Bool
    /// Video frames the decoder produced (hidden video is not decoded; see `setVideoShown`).
    public private(set) var decodedVideoFrames: Int64 = 0
    /// Shown video frames that were not there by the tick they were due at: they came later
    /// (a live publisher's packets arrived after the jitter allowance), and the picture held
    /// (a freeze) or skipped. A composition behind the clock still advances the video on the
    /// ticks whose picture it repeats, so its own lag is not counted here.
    public private(set) var lateVideoFrames: Int64 = 0
    /// The stage time the previous tick showed video up to, while the picture ran on (nil
    /// while hidden, waiting for a keyframe or restarting: nothing was due then).
    private var lastShownVideoTime: Int64?
    /// A live participant's picture and sound are both shown this much (µs, up to a tick)
    /// after their stage time, so that a picture whose frames come at the
    /// composition's frame rate lands on its ticks instead of up to half a frame beside them,
    /// with its sound. It follows the frames' cadence against the ticks (their clock drift);
    /// a wrap by a whole tick skips (or repeats) one picture and as much sound.
    public private(set) var cadenceShift: Int64 = 0
    /// The time of the frame shown before (for the cadence: consecutive frames a tick apart).
    private var previousFrameTime: Int64?
    private var cadenceFrames = 0
    static let cadenceHysteresis: Int64 = 2_000
    /// `cadenceShift` when audio was last placed: a gap it opened since is a delay, not sound missing.
    private var audioCadenceShift: Int64 = 0

    // Hidden video: read on the stage clock, not decoded (see `setVideoShown`).
    public private(set) var isVideoShown = true
    /// Stage time of the latest video packet read while hidden.
    private var hiddenVideoTime: Int64?
    /// The stage time video was last advanced to: a keyframe read while hidden restarts
    /// decoding only once it is due (audio reads ahead, and with it the video packets).
    private var videoStageTime: Int64 = .min
    /// Keyframes read while hidden before they were due (queue index, stage time, the mapper
    /// as it stood before them): decoding restarts at the latest once the stage reaches it.
    private var deferredRestarts: [(index: Int, time: Int64, mapper: TimestampMapper)] = []
    /// Maps the packets read while hidden (the decoder maps frames only when it decodes
    /// them): at a restart the video mapper takes its state, so the frames decoded from the
    /// keyframe on continue from the packets dropped before it.
    private var hiddenMapper: TimestampMapper?
    /// Packets the decoder never saw were dropped: it restarts at the keyframe heading the queue.
    private var videoRestart = false
    /// Hidden video ran longer than the queue holds without a keyframe: video packets are
    /// dropped until one arrives, and the picture returns with it.
    private var awaitingKeyframe = false
    /// Packets dropped while shown and waiting for a keyframe: after as many as the queue
    /// holds, the container's keyframe flags are not trusted any more (the decoder finds its
    /// own keyframes in the bitstream).
    private var droppedAwaitingKeyframe = 0

    // Audio.
    public let audio: AudioRing
    private var audioMapper: TimestampMapper
    private var audioNextPosition: Int64?
    private let scratchLeft: UnsafeMutablePointer<Float>
    private let scratchRight: UnsafeMutablePointer<Float>
    private let scratchCapacity = 48_000
    private let decodedAudio = Frame()
    /// The resampler is stretching or squeezing to follow a live publisher's clock.
    private var compensating = false
    /// The first stage sample position audio was written at: before it nothing was missing.
    private var audioFirstPosition: Int64?
    /// Samples the mixer asked for while this participant was audible and had none (its
    /// audio arrived after the jitter allowance, or stopped without the publisher leaving).
    public private(set) var audioUnderrunSamples: Int64 = 0

    private let readPacket = Packet()
    public private(set) var endOfMedia = false
    public private(set) var failure: String?
    /// Video is above 1080p: rendered as audio-only (SPEC §4), and not decoded at all.
    public private(set) var videoTooLarge = false
    /// Stage time after which the media has no more video.
    public private(set) var videoEndTime: Int64?

    public var hasVideoStream: Bool { videoDecoder != nil }

    /// Stage time (µs) at which this participant's media ends, when the container knows.
    public var mediaEndTime: Int64? { source.durationMicroseconds.map { offsetMicroseconds + $0 } }

    /// A recorded participant: the media file at `mediaPath`.
    public convenience init(participantId: String, mediaPath: String, offset: MediaTime, mixRate: Int = 48_000,
                            limits: DecoderLimits = DecoderLimits(), logger: Logger) throws(FFmpegError) {
        try self.init(participantId: participantId, source: try DemuxerMediaSource(url: mediaPath), offset: offset,
                      mixRate: mixRate, limits: limits, logger: logger)
    }

    /// - Parameter offset: stage time at which the source's first timestamp plays.
    /// - Parameter maxForwardGap: a forward timestamp jump (µs) beyond which a recorded
    ///   source is taken to have a broken timestamp rather than a real gap (default 10 s).
    /// - Parameter wallClockTimed: the source's times are when its media happened (an
    ///   individual recording of a live session): its first picture is shown when due, as the
    ///   live composite showed it, not a frame early to hide a container's audio priming.
    public init(participantId: String, source: any ParticipantMediaSource, offset: MediaTime, mixRate: Int = 48_000,
                limits: DecoderLimits = DecoderLimits(), maxForwardGap: Int64? = nil, wallClockTimed: Bool = false,
                logger: Logger) throws(FFmpegError) {
        self.participantId = participantId
        self.mixRate = mixRate
        self.logger = logger
        self.source = source
        self.limits = limits
        offsetMicroseconds = offset.microsecondsValue
        fileStart = source.startTimeMicroseconds ?? 0
        frameStep = 33_333
        firstPictureEarly = !source.isLive && !wallClockTimed
        // A live source's timestamps are already on the stage clock (arrival-anchored, with
        // their own discontinuity handling): only shift them, never re-anchor on a gap.
        let gap: Int64 = source.isLive ? .max / 4 : maxForwardGap ?? 10_000_000
        videoMapper = TimestampMapper(offset: offsetMicroseconds - fileStart, maxForwardGap: gap)
        audioMapper = TimestampMapper(offset: offsetMicroseconds - fileStart, maxForwardGap: gap)
        // Up to 10 s (as far as audio may run ahead of 300 queued video packets in badly
        // interleaved media); starts at 1 s, which holds what a healthy stage needs.
        audio = AudioRing(capacity: mixRate * 10, initialCapacity: mixRate)
        scratchLeft = .allocate(capacity: scratchCapacity)
        scratchRight = .allocate(capacity: scratchCapacity)
        videoDrained = true
        videoDecoderEnded = true
        if let video = source.stream(.video) { try openVideo(video) }
        if let audio = source.stream(.audio) { audioDecoder = try Decoder(parameters: audio.parameters, stream: audio.info, limits: limits) }
    }

    /// (Re)opens the video decoder for a stream, or marks the participant audio-only when
    /// its picture is above 1080p (announced sizes only; decoded sizes are checked again).
    private func openVideo(_ setup: MediaStreamSetup) throws(FFmpegError) {
        videoDecoder = nil
        if ParticipantSubscriber.isAbove1080p(width: setup.info.width, height: setup.info.height) {
            videoTooLarge = true
            return
        }
        videoTooLarge = false
        // The display matrix gives counter-clockwise degrees; turn the other way.
        rotationTurns = ((Int((Double(-setup.info.rotationDegrees) / 90).rounded()) % 4) + 4) % 4
        // Frame threads (`videoThreads` > 1) let one decoder use several cores; the
        // compositor decodes participants side by side instead (see VideoCompositor).
        var videoLimits = limits
        videoLimits.threads = limits.videoThreads
        videoDecoder = try Decoder(parameters: setup.parameters, stream: setup.info, limits: videoLimits)
        videoDrained = false
        videoDecoderEnded = false
        videoEndTime = nil
    }

    /// A live source announced a new stream setup: same codec → the running decoder gets the
    /// new configuration record in band (no gap); otherwise it is replaced.
    private func streamChanged(_ type: MediaType) {
        guard let setup = source.stream(type) else { return }
        let running = type == .video ? videoDecoder : audioDecoder
        if let running, let extradata = setup.inBandExtradata, running.stream.codecName == setup.info.codecName,
           !(type == .video && ParticipantSubscriber.isAbove1080p(width: setup.info.width, height: setup.info.height)) {
            if type == .video { pendingVideoExtradata = extradata } else { pendingAudioExtradata = extradata }
            return
        }
        do {
            if type == .video {
                for packet in videoPackets { recycle(packet) }
                videoPackets.removeAll(keepingCapacity: true)
                pendingVideoExtradata = nil
                try openVideo(setup)
            } else {
                pendingAudioExtradata = nil
                audioDecoder = try Decoder(parameters: setup.parameters, stream: setup.info, limits: limits)
            }
        } catch {
            logger.warning("cannot open decoder; dropping this stream", metadata: ["participant.id": "\(participantId)", "error": "\(error)"])
            if type == .video { videoDecoder = nil } else { audioDecoder = nil }
        }
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

    /// How large the compositor draws the picture (nil: not at all), told to the source on
    /// every change.
    public func setDrawnSize(_ size: PixelSize?) {
        guard !drawnSizeTold || size != drawnSize else { return }
        drawnSize = size
        drawnSizeTold = true
        source.drawnSizeChanged(size)
    }

    /// Whether the compositor shows this participant's picture. Hidden video (stopped, or not
    /// published) is not decoded: its packets are still read on the stage clock, and only
    /// those since the latest keyframe are kept. Shown again, it decodes from that keyframe
    /// up to the tick at once (at most one keyframe interval), so the picture returns on the
    /// tick it is asked for, as it would have been had it been decoded all along. A keyframe
    /// interval longer than the queue holds (300 packets) is dropped instead, and the picture
    /// returns at the next keyframe (camera-off until then; if no packet is flagged as one
    /// within another 300, the decoder is fed on and finds its own). A live publisher's stopped video
    /// sends nothing, so nothing is dropped: its decoder goes on where it was.
    public func setVideoShown(_ shown: Bool) {
        guard shown != isVideoShown else { return }
        isVideoShown = shown
        hiddenVideoTime = nil
        if !shown, hiddenMapper == nil { hiddenMapper = videoMapper }
        if shown, !awaitingKeyframe { hiddenMapper = nil }
        if shown, videoRestart || awaitingKeyframe {
            // Whatever `current` holds is from before the gap.
            currentTime = nil
            pendingTime = nil
        }
    }

    /// Makes `current` the latest frame whose stage time is ≤ `stageTime` (µs). `tickLead`:
    /// `stageTime` is that far ahead of the composition's tick, half a tick (0: unknown); a
    /// live participant's pictures and sound then follow the ticks' cadence (`cadenceShift`).
    public func advanceVideo(to stageTime: Int64, tickLead: Int64 = 0) {
        videoStageTime = stageTime
        if videoDecoder == nil, source.isLive {
            // A live video stream announced after the audio (WHIP announces it with its first
            // keyframe) is found here, not at the mixer's next read: that would show its first
            // picture a frame late. Bounded: what is queued, at most a queue's worth.
            var reads = 0
            while videoDecoder == nil, reads < ParticipantSubscriber.maxQueuedVideoPackets, readOne() { reads += 1 }
        }
        if !deferredRestarts.isEmpty {
            applyDueRestarts()
            // Shown: decoding goes on from the queue's head; later keyframes are just frames.
            if isVideoShown && !awaitingKeyframe { deferredRestarts.removeAll(keepingCapacity: true) }
        }
        guard let decoder = videoDecoder else { return }
        if !isVideoShown || awaitingKeyframe {
            lastShownVideoTime = nil
            readHiddenVideo(to: stageTime)
            guard isVideoShown, !awaitingKeyframe else { return }
        }
        if videoRestart {
            videoRestart = false
            lastShownVideoTime = nil
            decoder.flush()
            videoDrained = false
            videoDecoderEnded = false
        }
        let previousTick = lastShownVideoTime
        lastShownVideoTime = stageTime
        while true {
            if let due = pendingTime {
                // A recorded file's first picture often starts a few ms after its audio
                // (containers shift video by the AAC priming): show it at once rather than flash
                // camera-off. A live tile, and a recording timed on the wall clock (a session
                // re-rendered from its recordings), show camera-off until the first picture is due.
                let shown = due &+ cadenceShift
                guard shown <= stageTime || (currentTime == nil && firstPictureEarly && due - stageTime < frameStep) else { return }
                let late = previousTick.map { currentTime != nil && shown <= $0 } ?? false
                if late { lateVideoFrames &+= 1 }
                if source.isLive, tickLead > 0 {
                    followCadence(of: due, late: late || previousTick == nil, tick: stageTime &- tickLead, tickLead: tickLead)
                }
                current.swap(with: pending)
                currentTime = due
                videoGeneration &+= 1
                pendingTime = nil
            }
            guard decodeNextVideoFrame() else { return }
        }
    }

    /// Moves `cadenceShift` an eighth of the way to within 2 ms of where a picture a tick after
    /// the one before (one frame of a picture at the composition's rate) lands on its tick (all
    /// the way for the first), then keeps it within [0, a tick] (2 ms either way) by a whole tick.
    /// Pictures at another rate, or late, leave it as it is.
    private func followCadence(of due: Int64, late: Bool, tick: Int64, tickLead: Int64) {
        defer { previousFrameTime = due }
        let period = 2 &* tickLead
        guard !late, let previous = previousFrameTime, abs(due &- previous &- period) <= period / 8 else { return }
        let miss = tick &- (due &+ cadenceShift)
        guard abs(miss) <= tickLead else { return }
        // Within 2 ms (an RTMP timestamp's rounding, what the sound's drift following leaves
        // alone) the picture is on its tick: chasing less would only wobble the sound's pitch.
        let dead = ParticipantSubscriber.cadenceHysteresis
        cadenceShift &+= cadenceFrames == 0 ? miss : (miss > dead ? miss &- dead : miss < -dead ? miss &+ dead : 0) / 8
        cadenceFrames &+= 1
        // Within a tick later (and a little either way), never earlier: the sound is mixed a
        // tick ahead of the clock, and the allowance's margin keeps only a few ms beyond that.
        if cadenceShift > period &+ ParticipantSubscriber.cadenceHysteresis {
            cadenceShift &-= period
        } else if cadenceShift < -ParticipantSubscriber.cadenceHysteresis {
            cadenceShift &+= period
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
                decodedVideoFrames += 1
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
                } else if !endOfMedia {
                    return false // a live source has nothing more yet
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
        // A live source is read even before it has audio: reading is how its stream setups
        // (and a video-only publisher's packets) arrive.
        guard audioDecoder != nil || source.isLive else { return }
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
            let stage = audioMapper.map(micro, nominalStep: stepMicro) &+ cadenceShift
            position = stage * Int64(mixRate) / 1_000_000
        } else {
            position = audioNextPosition ?? Int64(mixRate) * offsetMicroseconds / 1_000_000
        }
        var crossfade = false
        // The cadence wrapping by a tick (or taken up at first): a step of the sound's own,
        // apart from what its timestamps do; a smaller move is followed like drift.
        var cadenceStep: Int64 = 0
        if source.isLive {
            let move = (cadenceShift &- audioCadenceShift) &* Int64(mixRate) / 1_000_000
            audioCadenceShift = cadenceShift
            if abs(move) > Int64(mixRate / 200) { cadenceStep = move }
        }
        if let expected = audioNextPosition {
            let error = position - expected
            if source.isLive {
                // A live publisher's clock drifts against ours, and its timestamps slew with
                // the arrival mapping (≤ 0.1 %): stay contiguous and stretch or squeeze the
                // sound to follow small errors (5 ms earlier to 10 ms later: a small step up of
                // the allowance is stretched, not a gap). A larger one is a step of its
                // timeline, which the picture took at the same instant (the jitter allowance
                // stepping, by 10 ms or more down, the cadence wrapping by a tick, the
                // publisher's timeline settling in its first seconds, a discontinuity): the
                // sound takes it at once too, a step back skipping what it overlaps with a
                // crossfade, one forward a gap.
                let drift = error &- cadenceStep
                if drift >= -Int64(mixRate / 200), drift <= Int64(mixRate / 100) {
                    position = expected &+ cadenceStep
                    crossfade = cadenceStep < 0
                    followDrift(error: drift)
                } else {
                    crossfade = error < 0
                    logger.debug("live audio steps with its timestamps", metadata: [
                        "participant.id": "\(participantId)", "audio.error_ms": "\(error * 1000 / Int64(mixRate))"])
                }
            } else if abs(error) <= Int64(mixRate / 50) {
                // Recorded media: keep audio contiguous unless it is off by more than 20 ms.
                position = expected
            }
        }
        audio.write(left: scratchLeft, right: scratchRight, count: samples, at: position, crossfade: crossfade,
                    uncountedSilence: max(0, cadenceStep))
        audioNextPosition = position + Int64(samples)
        if audioFirstPosition == nil { audioFirstPosition = position }
    }

    /// The mixer is about to mix [from, from + count) of this participant, audible: counts
    /// the samples it has none for, from its first audio until its media ends.
    public func noteAudioRead(from: Int64, count: Int) {
        guard let first = audioFirstPosition, !endOfMedia else { return }
        let to = from &+ Int64(count)
        let begin = max(from, first)
        guard begin < to else { return }
        audioUnderrunSamples &+= (to &- begin) &- Int64(audio.heldCount(from: begin, to: to))
    }

    /// Samples of this participant's sound that were silence it did not send: underruns,
    /// and the gaps its timestamps jumped over (the jitter allowance stepping up).
    public var audioGapSamples: Int64 { audioUnderrunSamples &+ audio.silenceFilledSamples }

    /// Asks the resampler to absorb `error` samples (positive: the audio is due later than
    /// contiguous playback would put it) over the next second: a rate change of at most 1 %
    /// (for the largest error kept, 10 ms), and about 0.1 % while following a slewing clock.
    /// Errors within 2 ms are left alone: RTMP timestamps are whole milliseconds, so an AAC
    /// frame's position wobbles by up to ±0.5 ms.
    private func followDrift(error: Int64) {
        let threshold = Int64(mixRate / 500)
        if abs(error) > threshold {
            try? resampler.compensate(samples: Int(error), over: mixRate)
            compensating = true
        } else if compensating {
            try? resampler.compensate(samples: 0, over: mixRate)
            compensating = false
        }
    }

    // MARK: Demux

    /// Reads one packet: audio is decoded at once; video is queued for `decodeNextVideoFrame`.
    /// False at end of media (or on a read error, which ends this participant's media).
    private func readOne() -> Bool {
        guard !endOfMedia else { return false }
        let result: MediaSourceRead
        do {
            result = try source.read(into: readPacket)
        } catch {
            failure = error.description
            logger.warning("media read error; ending this participant's media", metadata: ["participant.id": "\(participantId)", "error": "\(error)"])
            finishMedia()
            return false
        }
        switch result {
        case .endOfMedia:
            finishMedia()
            return false
        case .wouldBlock:
            return false
        case .streamChanged(let type):
            streamChanged(type)
        case .packet(.video):
            guard let videoDecoder else { break }
            if awaitingKeyframe {
                let givingUp = isVideoShown && droppedAwaitingKeyframe >= ParticipantSubscriber.maxQueuedVideoPackets
                guard readPacket.isKeyframe || givingUp else {
                    if isVideoShown { droppedAwaitingKeyframe += 1 }
                    noteHiddenVideo(readPacket, timeBase: videoDecoder.stream.timeBase, restart: false)
                    readPacket.unref()
                    break
                }
                if givingUp {
                    logger.warning("no packet flagged as a keyframe since the video was shown again; decoding on",
                                   metadata: ["participant.id": "\(participantId)", "packets.dropped": "\(droppedAwaitingKeyframe)"])
                }
                awaitingKeyframe = false
                droppedAwaitingKeyframe = 0
                if isVideoShown {
                    noteHiddenVideo(readPacket, timeBase: videoDecoder.stream.timeBase, restart: true)
                    hiddenMapper = nil
                }
            }
            if !isVideoShown {
                // Decoding can start at a keyframe that is due: what came before is not
                // needed any more. One still ahead of the stage (read with the audio ahead of
                // time) waits in the queue behind the frames due before it.
                let time = readPacket.isKeyframe ? hiddenStageTime(of: readPacket, timeBase: videoDecoder.stream.timeBase) : nil
                let restart = readPacket.isKeyframe && time.map { $0 <= videoStageTime } ?? true
                if readPacket.isKeyframe, !restart, let time {
                    deferredRestarts.append((videoPackets.count, time, hiddenMapper ?? videoMapper))
                }
                noteHiddenVideo(readPacket, timeBase: videoDecoder.stream.timeBase, restart: restart)
                if restart {
                    dropQueuedVideo()
                } else if videoPackets.count + 1 >= ParticipantSubscriber.maxQueuedVideoPackets {
                    dropQueuedVideo()
                    awaitingKeyframe = true
                    readPacket.unref()
                    break
                }
            }
            let packet = videoPacketPool.popLast() ?? Packet()
            readPacket.move(into: packet)
            if let extradata = pendingVideoExtradata {
                pendingVideoExtradata = nil
                try? packet.attachNewExtradata(extradata)
            }
            videoPackets.append(packet)
        case .packet(.audio):
            guard let audioDecoder else { break }
            if let extradata = pendingAudioExtradata {
                pendingAudioExtradata = nil
                try? readPacket.attachNewExtradata(extradata)
            }
            decodeAudio(readPacket, decoder: audioDecoder)
        case .packet(.other):
            break
        }
        return true
    }

    /// Hidden video, or video waiting for a keyframe: reads (audio is decoded as usual, video
    /// only queued or dropped) until the video reaches `stageTime`, so that it is on the stage
    /// clock when shown again. Bounded per call, in case timestamps jump.
    private func readHiddenVideo(to stageTime: Int64) {
        var reads = 0
        while !isVideoShown || awaitingKeyframe, hiddenVideoTime.map({ $0 < stageTime }) ?? true,
              reads < 2 * ParticipantSubscriber.maxQueuedVideoPackets {
            guard readOne() else { return }
            reads += 1
        }
    }

    /// Maps a packet read while hidden onto the stage clock. At a `restart` (a keyframe that
    /// decoding will start from), the video mapper continues from the packets before it, as
    /// if their frames had been decoded: a gap longer than `maxForwardGap` would otherwise
    /// look like a jump, and the frames since an earlier keyframe like one backwards.
    /// The stage reached a keyframe queued ahead of time: what came before it is not needed.
    private func applyDueRestarts() {
        guard let last = deferredRestarts.lastIndex(where: { $0.time <= videoStageTime }) else { return }
        let restart = deferredRestarts[last]
        for packet in videoPackets.prefix(restart.index) { recycle(packet) }
        videoPackets.removeFirst(min(restart.index, videoPackets.count))
        videoMapper = restart.mapper
        pendingTime = nil
        videoRestart = true
        deferredRestarts.removeFirst(last + 1)
        for index in deferredRestarts.indices { deferredRestarts[index].index -= restart.index }
    }

    /// The stage time a packet read while hidden would map to (nothing is changed).
    private func hiddenStageTime(of packet: Packet, timeBase: Rational) -> Int64? {
        guard let raw = packet.timestamp else { return nil }
        var mapper = hiddenMapper ?? videoMapper
        return mapper.map(timeBase.rescale(raw, to: MediaTime.microseconds), nominalStep: frameStep)
    }

    private func noteHiddenVideo(_ packet: Packet, timeBase: Rational, restart: Bool) {
        guard let raw = packet.timestamp else { return }
        let micro = timeBase.rescale(raw, to: MediaTime.microseconds)
        var mapper = hiddenMapper ?? videoMapper
        if restart { videoMapper = mapper }
        hiddenVideoTime = mapper.map(micro, nominalStep: frameStep)
        hiddenMapper = mapper
    }

    /// Drops the queued video packets and the frame decoded ahead: decoding restarts at the
    /// next keyframe queued.
    private func dropQueuedVideo() {
        for packet in videoPackets { recycle(packet) }
        videoPackets.removeAll(keepingCapacity: true)
        deferredRestarts.removeAll(keepingCapacity: true)
        pendingTime = nil
        videoRestart = true
    }

    private func finishMedia() {
        endOfMedia = true
        if let audioDecoder {
            _ = try? audioDecoder.send(nil)
            while (try? audioDecoder.receive(into: decodedAudio)) == .frame { parkAudio(decoder: audioDecoder) }
        }
    }
}
