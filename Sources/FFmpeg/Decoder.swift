internal import CFFmpeg
internal import CFFmpegShim
import MediaCore

public enum SendResult: Equatable { case accepted, outputFull, ended }
public enum ReceiveResult: Equatable { case frame, needsInput, endOfStream }

/// Limits that bound what a hostile or broken input can make us allocate.
public struct DecoderLimits: Sendable {
    /// Largest picture (width × height) a video decoder accepts.
    public var maxPixels: Int64
    /// Largest audio frame (samples per channel) an audio decoder accepts.
    public var maxSamples: Int64
    /// Decoder threads (0 = FFmpeg decides).
    public var threads: Int
    /// Threads for video decoders (frame threading). One: a composition decodes its
    /// participants side by side instead, which costs no extra contexts or frames.
    public var videoThreads: Int

    public init(maxPixels: Int64 = 4096 * 2304, maxSamples: Int64 = 48_000 * 4, threads: Int = 1, videoThreads: Int = 1) {
        self.maxPixels = maxPixels
        self.maxSamples = maxSamples
        self.threads = threads
        self.videoThreads = videoThreads
    }
}

/// A libavcodec decoder for one demuxed stream (send packets, receive frames).
public final class Decoder {
    private var context: UnsafeMutablePointer<AVCodecContext>?
    public let stream: StreamInfo

    public convenience init(demuxer: Demuxer, stream: StreamInfo, limits: DecoderLimits = DecoderLimits()) throws(FFmpegError) {
        try self.init(parameters: try demuxer.parameters(of: stream), stream: stream, limits: limits)
    }

    /// Opens a decoder for `parameters`; `stream` names it and gives the packets' time base.
    public init(parameters: CodecParameters, stream: StreamInfo, limits: DecoderLimits = DecoderLimits()) throws(FFmpegError) {
        self.stream = stream
        guard let codec = avcodec_find_decoder(parameters.pointer.pointee.codec_id) else {
            throw FFmpegError(kind: .unsupported, operation: "decoder for \(stream.codecName)", message: "no decoder")
        }
        guard let ctx = avcodec_alloc_context3(codec) else {
            throw FFmpegError(kind: .outOfMemory, operation: "decoder for \(stream.codecName)", message: "allocation failed")
        }
        context = ctx
        try check(avcodec_parameters_to_context(ctx, parameters.pointer), "decoder parameters for \(stream.codecName)")
        ctx.pointee.pkt_timebase = stream.timeBase.avRational
        ctx.pointee.max_pixels = limits.maxPixels
        ctx.pointee.max_samples = limits.maxSamples
        ctx.pointee.thread_count = Int32(limits.threads)
        if limits.threads != 1 { ctx.pointee.thread_type = FF_THREAD_FRAME }
        try check(avcodec_open2(ctx, codec, nil), "open decoder \(stream.codecName)")
    }

    deinit { avcodec_free_context(&context) }

    /// Sends a packet (nil = drain). `.outputFull`: receive frames, then send it again.
    public func send(_ packet: Packet?) throws(FFmpegError) -> SendResult {
        let code = avcodec_send_packet(context, packet?.pointer)
        if code == AVCodes.again { return .outputFull }
        if code == AVCodes.eof { return .ended }
        try check(code, "decode \(stream.codecName)")
        return .accepted
    }

    /// Receives the next decoded frame into `frame` (its old contents are released).
    public func receive(into frame: Frame) throws(FFmpegError) -> ReceiveResult {
        frame.unref()
        let code = avcodec_receive_frame(context, frame.pointer)
        if code == AVCodes.again { return .needsInput }
        if code == AVCodes.eof { return .endOfStream }
        try check(code, "decode \(stream.codecName)")
        return .frame
    }

    public func flush() { avcodec_flush_buffers(context) }
}
