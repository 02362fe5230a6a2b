internal import CFFmpeg
internal import CFFmpegShim
import MediaCore

/// A libavformat muxer writing either to a URL (file, rtmp://) or to memory (HLS segments,
/// handed to storage as bytes).
public final class Muxer {
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let inMemory: Bool
    private var headerWritten = false
    private var finished = false
    private let scratch = Packet()
    private var sourceTimeBases: [Rational] = []
    /// Per stream: how far before 0 its source stamps packets (an encoder's priming), in its
    /// source time base.
    private var primings: [Int64] = []
    /// Per stream, in the stream's own time base: added to every timestamp (see `writeHeader`).
    private var shifts: [Int64] = []
    public let format: String
    /// When false the caller orders packets itself (segmenters, so that a segment holds
    /// exactly the packets written before the cut) and they are written as they come.
    private let interleaved: Bool

    /// Kept alive while libavformat may call back into it.
    private let interrupt: IOInterrupt?

    /// `url` nil: the output collects in memory and `finish()` / `cutSegment()` return it.
    /// `protocolOptions` go to the protocol that opens `url` (e.g. `rtmp_playpath`,
    /// `send_buffer_size`); `interrupt` bounds every blocking network call (connect, handshake,
    /// writes, close). `displayURL` names the output in errors (a URL may hold a secret).
    public init(format: String, url: String? = nil, interleaved: Bool = true,
                protocolOptions: [String: String] = [:], interrupt: IOInterrupt? = nil,
                displayURL: String? = nil) throws(FFmpegError) {
        self.format = format
        self.interleaved = interleaved
        self.interrupt = interrupt
        inMemory = url == nil
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        try check(avformat_alloc_output_context2(&ctx, nil, format, url), "create \(format) muxer")
        context = ctx
        if let interrupt {
            ctx!.pointee.interrupt_callback = AVIOInterruptCB(callback: ioInterruptCallback,
                                                              opaque: Unmanaged.passUnretained(interrupt).toOpaque())
        }
        if inMemory {
            try check(avio_open_dyn_buf(&ctx!.pointee.pb), "open memory output")
        } else if let url, ctx!.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
            var dictionary: OpaquePointer? = nil
            for (key, value) in protocolOptions { av_dict_set(&dictionary, key, value, 0) }
            defer { av_dict_free(&dictionary) }
            FFmpegLogging.tlsErrorCapture
            _ = FFmpegLogging.takeTLSError()
            // avio_open2 copies the callback into the protocol contexts it opens.
            var callback = ctx!.pointee.interrupt_callback
            let code = interrupt == nil
                ? avio_open2(&ctx!.pointee.pb, url, AVIO_FLAG_WRITE, nil, &dictionary)
                : avio_open2(&ctx!.pointee.pb, url, AVIO_FLAG_WRITE, &callback, &dictionary)
            if code < 0 {
                var error = FFmpegError(code: code, operation: "open \(displayURL ?? url)")
                error.tlsFailure = FFmpegLogging.takeTLSError()
                throw error
            }
        }
    }

    deinit {
        guard let ctx = context else { return }
        if ctx.pointee.pb != nil {
            if inMemory {
                var buffer: UnsafeMutablePointer<UInt8>? = nil
                _ = avio_close_dyn_buf(ctx.pointee.pb, &buffer)
                av_free(buffer)
            } else {
                avio_closep(&ctx.pointee.pb)
            }
        }
        avformat_free_context(ctx)
    }

    /// Adds a stream carrying `encoder`'s output; returns its index.
    @discardableResult
    public func addStream(like encoder: Encoder) throws(FFmpegError) -> Int {
        guard let stream = avformat_new_stream(context, nil) else {
            throw FFmpegError(kind: .outOfMemory, operation: "add stream", message: "allocation failed")
        }
        try check(avcodec_parameters_from_context(stream.pointee.codecpar, encoder.context), "copy \(encoder.codecName) parameters")
        stream.pointee.time_base = encoder.timeBase.avRational
        sourceTimeBases.append(encoder.timeBase)
        primings.append(encoder.primingTicks)
        return Int(stream.pointee.index)
    }

    /// Adds a stream from a parameter snapshot (see `StreamParameters`); returns its index.
    @discardableResult
    public func addStream(_ parameters: StreamParameters) throws(FFmpegError) -> Int {
        guard let stream = avformat_new_stream(context, nil) else {
            throw FFmpegError(kind: .outOfMemory, operation: "add stream", message: "allocation failed")
        }
        try check(avcodec_parameters_copy(stream.pointee.codecpar, parameters.pointer), "copy stream parameters")
        stream.pointee.time_base = parameters.timeBase.avRational
        sourceTimeBases.append(parameters.timeBase)
        primings.append(parameters.primingTicks)
        return Int(stream.pointee.index)
    }

    public func writeHeader(options: [String: String] = [:]) throws(FFmpegError) {
        var dictionary: OpaquePointer? = nil
        for (key, value) in options { av_dict_set(&dictionary, key, value, 0) }
        defer { av_dict_free(&dictionary) }
        try check(avformat_write_header(context, &dictionary), "write \(format) header")
        headerWritten = true
        shifts = Self.shifts(primings: primings, sourceTimeBases: sourceTimeBases, streamTimeBases: (0..<sourceTimeBases.count).map {
            Rational(context!.pointee.streams[$0]!.pointee.time_base)
        })
    }

    /// The container's time 0 is the earliest time any stream is stamped with, so no packet
    /// is written before it: an AAC encoder stamps its priming before the first frame (-1024
    /// samples), MPEG-TS wraps a negative time to 2^33 - n (26.5 hours on: players then
    /// cannot seek), and FLV cannot carry one either. libavformat's own avoidance
    /// (`avoid_negative_ts`) shifts by the first packet *written*, which is a video packet at 0
    /// when the video encoder has no lookahead (live), and left the audio after it negative.
    /// Every stream moves by the same time, so they stay in sync: per stream, the largest
    /// priming in that stream's time base (rounded to nearest like the packets themselves, so
    /// the earliest packet lands on 0 exactly).
    static func shifts(primings: [Int64], sourceTimeBases: [Rational], streamTimeBases: [Rational]) -> [Int64] {
        streamTimeBases.map { target in
            zip(primings, sourceTimeBases).map { priming, source in source.rescale(priming, to: target) }.max() ?? 0
        }
    }

    /// Writes a reference to `packet` (which stays valid for other destinations) on `stream`,
    /// rescaling its timestamps from its encoder's time base.
    public func write(_ packet: Packet, stream: Int) throws(FFmpegError) {
        try check(av_packet_ref(scratch.pointer, packet.pointer), "reference packet")
        scratch.streamIndex = stream
        let target = Rational(context!.pointee.streams[stream]!.pointee.time_base)
        scratch.rescaleTimestamps(from: sourceTimeBases[stream], to: target)
        if stream < shifts.count, shifts[stream] != 0 { scratch.shiftTimestamps(by: shifts[stream]) }
        let code = interleaved ? av_interleaved_write_frame(context, scratch.pointer) : av_write_frame(context, scratch.pointer)
        scratch.unref()
        try check(code, "write \(format) packet")
    }

    /// In-memory muxers: flushes what the muxer buffers (e.g. a pending audio PES), returns
    /// the bytes written since the previous cut, and starts a new buffer. For MPEG-TS the
    /// PAT/PMT are re-sent at the start of the next segment so each segment stands alone.
    public func cutSegment() throws(FFmpegError) -> [UInt8] {
        guard inMemory, let ctx = context else { return [] }
        try check(av_write_frame(ctx, nil), "flush \(format) muxer")
        avio_flush(ctx.pointee.pb)
        var buffer: UnsafeMutablePointer<UInt8>? = nil
        let size = avio_close_dyn_buf(ctx.pointee.pb, &buffer)
        ctx.pointee.pb = nil
        defer { av_free(buffer) }
        try check(avio_open_dyn_buf(&ctx.pointee.pb), "open memory output")
        if format == "mpegts" { av_opt_set(ctx.pointee.priv_data, "mpegts_flags", "+resend_headers", 0) }
        guard let buffer, size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: buffer, count: Int(size)))
    }

    /// Fragmented MP4: the next fragment starts at its packets' own decode times instead of
    /// where the previous fragment's durations end (a gap in the media, e.g. a publisher that
    /// was away and came back, stays a gap). No effect on other formats.
    public func markNextFragmentDiscontinuous() {
        guard format == "mp4", let ctx = context else { return }
        av_opt_set(ctx.pointee.priv_data, "movflags", "+frag_discont", 0)
    }

    /// Writes the trailer. For in-memory muxers returns everything written.
    @discardableResult
    public func finish() throws(FFmpegError) -> [UInt8] {
        guard !finished else { return [] }
        finished = true
        if headerWritten { try check(av_write_trailer(context), "write \(format) trailer") }
        guard inMemory, let ctx = context, ctx.pointee.pb != nil else { return [] }
        var buffer: UnsafeMutablePointer<UInt8>? = nil
        let size = avio_close_dyn_buf(ctx.pointee.pb, &buffer)
        ctx.pointee.pb = nil
        defer { av_free(buffer) }
        guard let buffer, size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: buffer, count: Int(size)))
    }
}
