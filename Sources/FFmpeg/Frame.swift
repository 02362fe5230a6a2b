internal import CFFmpeg
internal import CFFmpegShim
public import MediaCore

/// An owned AVFrame (decoded video or audio). Reused across decode calls: `receive` unrefs
/// the old buffers and takes new ones from the codec's pool, so steady state allocates nothing.
public final class Frame {
    fileprivate(set) var pointer: UnsafeMutablePointer<AVFrame>

    public init() {
        guard let frame = av_frame_alloc() else { fatalError("av_frame_alloc: out of memory") }
        pointer = frame
    }

    deinit {
        var frame: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&frame)
    }

    public var width: Int { Int(pointer.pointee.width) }
    public var height: Int { Int(pointer.pointee.height) }
    public var sampleCount: Int { Int(pointer.pointee.nb_samples) }
    public var sampleRate: Int { Int(pointer.pointee.sample_rate) }
    public var channelCount: Int { Int(pointer.pointee.ch_layout.nb_channels) }
    public var hasData: Bool { pointer.pointee.data.0 != nil || pointer.pointee.buf.0 != nil }

    /// The frame's timestamp (best effort), or nil when unknown.
    public var bestEffortTimestamp: Int64? {
        let ts = pointer.pointee.best_effort_timestamp
        return ts == AVCodes.noPTS ? nil : ts
    }

    public var pts: Int64 {
        get { pointer.pointee.pts }
        set { pointer.pointee.pts = newValue }
    }

    /// Display rotation in degrees (counter-clockwise, as FFmpeg reports), 0 when absent.
    public var rotationDegrees: Int {
        Int(cffshim_frame_rotation(pointer).rounded())
    }

    public func unref() { av_frame_unref(pointer) }

    /// Moves the buffers of `other` into this frame (other becomes empty). No copy.
    public func take(from other: Frame) {
        av_frame_unref(pointer)
        av_frame_move_ref(pointer, other.pointer)
    }

    /// Swaps contents with another frame (no copy, no allocation).
    public func swap(with other: Frame) {
        Swift.swap(&pointer, &other.pointer)
    }
}

/// An owned AVPacket (compressed data). Moved, never copied, between demuxer, decoder,
/// encoder and muxers.
public final class Packet {
    let pointer: UnsafeMutablePointer<AVPacket>

    public init() {
        guard let packet = av_packet_alloc() else { fatalError("av_packet_alloc: out of memory") }
        pointer = packet
    }

    deinit {
        var packet: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&packet)
    }

    public var streamIndex: Int {
        get { Int(pointer.pointee.stream_index) }
        set { pointer.pointee.stream_index = Int32(newValue) }
    }
    public var pts: Int64 {
        get { pointer.pointee.pts }
        set { pointer.pointee.pts = newValue }
    }
    public var dts: Int64 {
        get { pointer.pointee.dts }
        set { pointer.pointee.dts = newValue }
    }
    public var duration: Int64 {
        get { pointer.pointee.duration }
        set { pointer.pointee.duration = newValue }
    }
    public var size: Int { Int(pointer.pointee.size) }
    public var isKeyframe: Bool {
        get { pointer.pointee.flags & AV_PKT_FLAG_KEY != 0 }
        set { pointer.pointee.flags = newValue ? pointer.pointee.flags | AV_PKT_FLAG_KEY : pointer.pointee.flags & ~AV_PKT_FLAG_KEY }
    }
    public var hasPTS: Bool { pointer.pointee.pts != AVCodes.noPTS }
    public var hasDTS: Bool { pointer.pointee.dts != AVCodes.noPTS }
    /// The presentation timestamp, else the decoding one; nil when the packet has neither.
    public var timestamp: Int64? {
        if pointer.pointee.pts != AVCodes.noPTS { return pointer.pointee.pts }
        return pointer.pointee.dts == AVCodes.noPTS ? nil : pointer.pointee.dts
    }

    public func unref() { av_packet_unref(pointer) }

    /// A new packet referencing the same data (refcounted, no copy of the payload).
    public func reference() -> Packet {
        let copy = Packet()
        av_packet_ref(copy.pointer, pointer)
        return copy
    }

    /// Moves this packet's data into `other`.
    public func move(into other: Packet) {
        av_packet_unref(other.pointer)
        av_packet_move_ref(other.pointer, pointer)
    }

    /// Rescales pts/dts/duration between time bases.
    public func rescaleTimestamps(from source: Rational, to target: Rational) {
        av_packet_rescale_ts(pointer, source.avRational, target.avRational)
    }

    /// Adds `ticks` to pts and dts (those it has).
    func shiftTimestamps(by ticks: Int64) {
        if pointer.pointee.pts != AVCodes.noPTS { pointer.pointee.pts += ticks }
        if pointer.pointee.dts != AVCodes.noPTS { pointer.pointee.dts += ticks }
    }

    /// The payload bytes (copied), for tests and diagnostics.
    public var bytes: [UInt8] {
        guard let data = pointer.pointee.data, size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: size))
    }
}

extension Rational {
    var avRational: AVRational { AVRational(num: Int32(numerator), den: Int32(denominator)) }
    init(_ value: AVRational) { self.init(Int64(value.num), Int64(value.den == 0 ? 1 : value.den)) }
}

extension Frame {
    /// Copies planar float stereo samples into this (FLTP, allocated) audio frame.
    public func writeFloatPlanar(left: UnsafePointer<Float>, right: UnsafePointer<Float>, count: Int, pts: Int64) {
        let f = pointer.pointee
        let l = UnsafeMutableRawPointer(f.data.0!).assumingMemoryBound(to: Float.self)
        let r = UnsafeMutableRawPointer(f.data.1!).assumingMemoryBound(to: Float.self)
        l.update(from: left, count: count)
        r.update(from: right, count: count)
        pointer.pointee.nb_samples = Int32(count)
        pointer.pointee.pts = pts
    }

    /// Copies two float channels into this (FLT, packed stereo, allocated) audio frame.
    public func writeFloatInterleaved(left: UnsafePointer<Float>, right: UnsafePointer<Float>, count: Int, pts: Int64) {
        let samples = UnsafeMutableRawPointer(pointer.pointee.data.0!).assumingMemoryBound(to: Float.self)
        for i in 0..<count {
            samples[2 * i] = left[i]
            samples[2 * i + 1] = right[i]
        }
        pointer.pointee.nb_samples = Int32(count)
        pointer.pointee.pts = pts
    }
}

extension Packet {
    /// Makes `other` reference this packet's data (refcounted; no payload copy).
    public func reference(into other: Packet) {
        av_packet_unref(other.pointer)
        av_packet_ref(other.pointer, pointer)
    }
}

extension Frame {
    /// True for 8-bit planar YUV 4:2:0 (what H.264/VP8 decoders give us almost always).
    public var isYUV420P: Bool {
        let format = AVPixelFormat(rawValue: pointer.pointee.format)
        return format == AV_PIX_FMT_YUV420P || format == AV_PIX_FMT_YUVJ420P
    }

    /// Writes this YUV420P picture rotated clockwise by `quarterTurns` × 90° into `target`,
    /// (re)allocating `target`'s buffers only when its size or format must change. Used for
    /// sources with display-rotation metadata (phones), so the tile shows them upright.
    public func rotated(clockwiseQuarterTurns quarterTurns: Int, into target: Frame) throws(FFmpegError) {
        let turns = ((quarterTurns % 4) + 4) % 4
        let (w, h) = (width, height)
        let (outW, outH) = turns % 2 == 1 ? (h, w) : (w, h)
        let t = target.pointer
        if t.pointee.width != Int32(outW) || t.pointee.height != Int32(outH) || t.pointee.format != pointer.pointee.format || t.pointee.buf.0 == nil {
            av_frame_unref(t)
            t.pointee.width = Int32(outW)
            t.pointee.height = Int32(outH)
            t.pointee.format = pointer.pointee.format
            try check(av_frame_get_buffer(t, 0), "allocate rotated frame")
        } else {
            try check(av_frame_make_writable(t), "make rotated frame writable")
        }
        let src = pointer.pointee
        let dst = t.pointee
        rotatePlane(src.data.0!, Int(src.linesize.0), w, h, dst.data.0!, Int(dst.linesize.0), turns)
        rotatePlane(src.data.1!, Int(src.linesize.1), (w + 1) / 2, (h + 1) / 2, dst.data.1!, Int(dst.linesize.1), turns)
        rotatePlane(src.data.2!, Int(src.linesize.2), (w + 1) / 2, (h + 1) / 2, dst.data.2!, Int(dst.linesize.2), turns)
        t.pointee.pts = src.pts
        t.pointee.best_effort_timestamp = src.best_effort_timestamp
    }
}

private func rotatePlane(_ src: UnsafeMutablePointer<UInt8>, _ srcStride: Int, _ w: Int, _ h: Int,
                         _ dst: UnsafeMutablePointer<UInt8>, _ dstStride: Int, _ turns: Int) {
    switch turns {
    case 1: // clockwise: dst(x = h-1-y, y = x) = src(x, y)
        for y in 0..<h {
            let row = src + y * srcStride
            for x in 0..<w { dst[x * dstStride + (h - 1 - y)] = row[x] }
        }
    case 2:
        for y in 0..<h {
            let row = src + y * srcStride
            let out = dst + (h - 1 - y) * dstStride
            for x in 0..<w { out[w - 1 - x] = row[x] }
        }
    case 3: // counter-clockwise: dst(x = y, y = w-1-x) = src(x, y)
        for y in 0..<h {
            let row = src + y * srcStride
            for x in 0..<w { dst[(w - 1 - x) * dstStride + y] = row[x] }
        }
    default:
        for y in 0..<h { (dst + y * dstStride).update(from: src + y * srcStride, count: w) }
    }
}

extension Frame {
    /// A new YUV420P picture with its own buffers (canvases, test pictures).
    public convenience init(yuv420Width width: Int, height: Int) throws(FFmpegError) {
        self.init()
        pointer.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        pointer.pointee.width = Int32(width)
        pointer.pointee.height = Int32(height)
        try check(av_frame_get_buffer(pointer, 0), "allocate \(width)x\(height) picture")
    }
}
