internal import CFFmpeg
internal import CFFmpegShim
public import MediaCore

/// H.264 settings derived from an EncoderConfiguration.
public struct VideoEncoderSettings: Sendable, Equatable {
    public var width: Int
    public var height: Int
    /// Frames per second as a rational (30/1, 30000/1001 ...).
    public var frameRate: Rational
    public var bitrate: Int
    /// Frames between keyframes; equals the HLS segment duration so segments cut on IDRs.
    public var keyframeInterval: Int
    public var preset: String
    public var profile: String
    /// x264 threads (0 = auto).
    public var threads: Int
    /// Put SPS/PPS in extradata (needed by FLV/MP4 muxers).
    public var globalHeader: Bool
    /// Encode each frame as it comes (x264's zerolatency: no lookahead, sliced threads):
    /// live stages, where every frame of encoder delay is glass-to-glass latency.
    public var lowLatency: Bool

    public init(width: Int, height: Int, frameRate: Rational, bitrate: Int, keyframeInterval: Int,
                preset: String = "veryfast", profile: String = "main", threads: Int = 0, globalHeader: Bool = true,
                lowLatency: Bool = false) {
        self.lowLatency = lowLatency
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.bitrate = bitrate
        self.keyframeInterval = keyframeInterval
        self.preset = preset
        self.profile = profile
        self.threads = threads
        self.globalHeader = globalHeader
    }
}

public struct AudioEncoderSettings: Sendable, Equatable {
    public var sampleRate: Int
    public var channels: Int
    public var bitrate: Int

    public init(sampleRate: Int = 48_000, channels: Int = 2, bitrate: Int = 128_000) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitrate = bitrate
    }
}

/// A libavcodec encoder (send frames, receive packets). One encode feeds every destination.
public final class Encoder {
    var context: UnsafeMutablePointer<AVCodecContext>?
    public let codecName: String
    public let mediaType: MediaType
    public let timeBase: Rational

    /// libx264: constant frame rate, no B-frames (live RTMP), closed GOP of exactly
    /// `keyframeInterval` frames with scene-cut off so every segment starts on an IDR.
    public init(video settings: VideoEncoderSettings) throws(FFmpegError) {
        codecName = "libx264"
        mediaType = .video
        timeBase = settings.frameRate.inverted
        guard let codec = avcodec_find_encoder_by_name("libx264") else {
            throw FFmpegError(kind: .unsupported, operation: "open encoder libx264", message: "FFmpeg was built without libx264")
        }
        guard let ctx = avcodec_alloc_context3(codec) else {
            throw FFmpegError(kind: .outOfMemory, operation: "open encoder libx264", message: "allocation failed")
        }
        context = ctx
        ctx.pointee.width = Int32(settings.width)
        ctx.pointee.height = Int32(settings.height)
        ctx.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        ctx.pointee.time_base = timeBase.avRational
        ctx.pointee.framerate = settings.frameRate.avRational
        ctx.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
        ctx.pointee.bit_rate = Int64(settings.bitrate)
        ctx.pointee.rc_max_rate = Int64(settings.bitrate)
        ctx.pointee.rc_buffer_size = Int32(clamping: settings.bitrate * 2)
        ctx.pointee.gop_size = Int32(settings.keyframeInterval)
        ctx.pointee.keyint_min = Int32(settings.keyframeInterval)
        ctx.pointee.max_b_frames = 0
        ctx.pointee.thread_count = Int32(settings.threads)
        ctx.pointee.color_range = AVCOL_RANGE_MPEG
        // Tiles are scaled without a matrix conversion and our own colours (camera-off tiles)
        // are BT.601, like webcam and WebRTC sources: say so, so players show true colours.
        ctx.pointee.colorspace = AVCOL_SPC_SMPTE170M
        ctx.pointee.color_primaries = AVCOL_PRI_SMPTE170M
        ctx.pointee.color_trc = AVCOL_TRC_SMPTE170M
        if settings.globalHeader { ctx.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        var options: OpaquePointer? = nil
        defer { av_dict_free(&options) }
        av_dict_set(&options, "preset", settings.preset, 0)
        av_dict_set(&options, "profile", settings.profile, 0)
        av_dict_set(&options, "forced-idr", "1", 0)
        // Measured on a live 720p30 composition: the default lookahead and frame threads add
        // about 390 ms of glass-to-glass latency; zerolatency about none.
        if settings.lowLatency { av_dict_set(&options, "tune", "zerolatency", 0) }
        av_dict_set(&options, "x264-params", "scenecut=0:open-gop=0:bframes=0", 0)
        try check(avcodec_open2(ctx, codec, &options), "open encoder libx264 \(settings.width)x\(settings.height)")
    }

    /// FFmpeg's native AAC-LC encoder, planar float input.
    public init(audio settings: AudioEncoderSettings) throws(FFmpegError) {
        codecName = "aac"
        mediaType = .audio
        timeBase = Rational(1, Int64(settings.sampleRate))
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_AAC) else {
            throw FFmpegError(kind: .unsupported, operation: "open encoder aac", message: "no AAC encoder")
        }
        guard let ctx = avcodec_alloc_context3(codec) else {
            throw FFmpegError(kind: .outOfMemory, operation: "open encoder aac", message: "allocation failed")
        }
        context = ctx
        ctx.pointee.sample_rate = Int32(settings.sampleRate)
        ctx.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
        cffshim_channel_layout_default(&ctx.pointee.ch_layout, Int32(settings.channels))
        ctx.pointee.bit_rate = Int64(settings.bitrate)
        ctx.pointee.time_base = timeBase.avRational
        ctx.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
        try check(avcodec_open2(ctx, codec, nil), "open encoder aac")
    }

    /// libopus at 48 kHz stereo in 20 ms frames (960 samples), packed float input: the audio
    /// WebRTC viewers take (WHEP). Low-delay application, in-band FEC on.
    public init(opusBitrate bitrate: Int) throws(FFmpegError) {
        codecName = "libopus"
        mediaType = .audio
        timeBase = Rational(1, 48_000)
        guard let codec = avcodec_find_encoder_by_name("libopus") else {
            throw FFmpegError(kind: .unsupported, operation: "open encoder libopus", message: "no libopus encoder")
        }
        guard let ctx = avcodec_alloc_context3(codec) else {
            throw FFmpegError(kind: .outOfMemory, operation: "open encoder libopus", message: "allocation failed")
        }
        context = ctx
        ctx.pointee.sample_rate = 48_000
        ctx.pointee.sample_fmt = AV_SAMPLE_FMT_FLT
        cffshim_channel_layout_default(&ctx.pointee.ch_layout, 2)
        ctx.pointee.bit_rate = Int64(bitrate)
        ctx.pointee.time_base = timeBase.avRational
        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        av_dict_set(&options, "frame_duration", "20", 0)
        av_dict_set(&options, "application", "lowdelay", 0)
        av_dict_set(&options, "fec", "1", 0)
        try check(avcodec_open2(ctx, codec, &options), "open encoder libopus")
    }

    deinit { avcodec_free_context(&context) }

    /// The encoder's configuration record (SPS/PPS as avcC, AudioSpecificConfig), so its
    /// output can be decoded or muxed elsewhere.
    public var extradata: [UInt8] {
        guard let data = context?.pointee.extradata, let size = context?.pointee.extradata_size, size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(size)))
    }

    /// Samples per audio frame the encoder expects (1024 for AAC); 0 for video.
    public var frameSize: Int { Int(context!.pointee.frame_size) }

    /// How far before its first frame's time the encoder stamps its first packet, in
    /// `timeBase` ticks: AAC starts with 1024 samples of priming that decoders discard, stamped
    /// at -1024 so that the first frame's first sample still plays at the first frame's time.
    /// 0 for H.264 (no B-frames: decode order is presentation order).
    public var primingTicks: Int64 { Int64(context!.pointee.initial_padding) }

    /// A reusable frame in the encoder's input format (video canvas or audio frame of
    /// `frameSize` samples), allocated once.
    public func makeInputFrame() throws(FFmpegError) -> Frame {
        let frame = Frame()
        let ctx = context!.pointee
        if mediaType == .video {
            frame.pointer.pointee.format = ctx.pix_fmt.rawValue
            frame.pointer.pointee.width = ctx.width
            frame.pointer.pointee.height = ctx.height
            frame.pointer.pointee.color_range = ctx.color_range
            frame.pointer.pointee.colorspace = ctx.colorspace
        } else {
            frame.pointer.pointee.format = ctx.sample_fmt.rawValue
            frame.pointer.pointee.nb_samples = ctx.frame_size
            frame.pointer.pointee.sample_rate = ctx.sample_rate
            try check(av_channel_layout_copy(&frame.pointer.pointee.ch_layout, &context!.pointee.ch_layout), "audio frame layout")
        }
        try check(av_frame_get_buffer(frame.pointer, 0), "allocate \(codecName) input frame")
        return frame
    }

    /// Makes `frame` writable before drawing into it; a no-op unless the encoder still holds
    /// a reference to its buffers.
    public func prepareForWriting(_ frame: Frame) throws(FFmpegError) {
        try check(av_frame_make_writable(frame.pointer), "make frame writable")
    }

    /// Sends a frame (nil = flush at end of stream). `forceKeyframe` makes it an IDR.
    public func send(_ frame: Frame?, forceKeyframe: Bool = false) throws(FFmpegError) -> SendResult {
        if let frame {
            frame.pointer.pointee.pict_type = forceKeyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        }
        let code = avcodec_send_frame(context, frame?.pointer)
        if code == AVCodes.again { return .outputFull }
        if code == AVCodes.eof { return .ended }
        try check(code, "encode \(codecName)")
        return .accepted
    }

    /// Receives the next encoded packet (timestamps in `timeBase`).
    public func receive(into packet: Packet) throws(FFmpegError) -> ReceiveResult {
        packet.unref()
        let code = avcodec_receive_packet(context, packet.pointer)
        if code == AVCodes.again { return .needsInput }
        if code == AVCodes.eof { return .endOfStream }
        try check(code, "encode \(codecName)")
        return .frame
    }

    /// RFC 6381 codec string for HLS (e.g. "avc1.4d401f", "mp4a.40.2").
    public var rfc6381Codec: String {
        let ctx = context!.pointee
        if mediaType == .audio { return "mp4a.40.2" }
        // avcC extradata: [1, profile, compat, level, ...]; Annex B: 00 00 00 01 67 profile compat level.
        if let extra = ctx.extradata, ctx.extradata_size >= 8 {
            let bytes = UnsafeBufferPointer(start: extra, count: Int(ctx.extradata_size))
            var offset: Int? = nil
            if bytes[0] == 1 { offset = 1 } else {
                for i in 0..<(bytes.count - 4) where bytes[i] == 0 && bytes[i + 1] == 0 && bytes[i + 2] == 1 && bytes[i + 3] & 0x1F == 7 {
                    offset = i + 4
                    break
                }
            }
            if let offset, offset + 2 < bytes.count {
                return "avc1." + [bytes[offset], bytes[offset + 1], bytes[offset + 2]].map(hexByte).joined()
            }
        }
        return "avc1.4d401f"
    }
}

private func hexByte(_ byte: UInt8) -> String {
    let text = String(byte, radix: 16)
    return byte < 16 ? "0" + text : text
}
