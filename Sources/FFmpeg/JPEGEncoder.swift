internal import CFFmpeg
internal import CFFmpegShim

/// Encodes YUV420P pictures (the compositor's canvas) as JPEG for recording thumbnails.
public final class JPEGEncoder {
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private let packet = Packet()

    public init(width: Int, height: Int, quality: Int32 = 4) throws(FFmpegError) {
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG) else {
            throw FFmpegError(kind: .unsupported, operation: "open JPEG encoder", message: "no MJPEG encoder")
        }
        guard let ctx = avcodec_alloc_context3(codec) else {
            throw FFmpegError(kind: .outOfMemory, operation: "open JPEG encoder", message: "allocation failed")
        }
        context = ctx
        ctx.pointee.width = Int32(width)
        ctx.pointee.height = Int32(height)
        ctx.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        ctx.pointee.color_range = AVCOL_RANGE_MPEG
        // Limited-range 4:2:0 JPEG is an FFmpeg extension every decoder we target reads.
        ctx.pointee.strict_std_compliance = FF_COMPLIANCE_UNOFFICIAL
        ctx.pointee.time_base = AVRational(num: 1, den: 1)
        ctx.pointee.flags |= AV_CODEC_FLAG_QSCALE
        ctx.pointee.global_quality = quality * FF_QP2LAMBDA
        try check(avcodec_open2(ctx, codec, nil), "open JPEG encoder")
    }

    deinit { avcodec_free_context(&context) }

    /// One JPEG image of `frame` (YUV420P, the encoder's size).
    public func encode(_ frame: Frame) throws(FFmpegError) -> [UInt8] {
        let savedPTS = frame.pts
        let savedType = frame.pointer.pointee.pict_type
        frame.pointer.pointee.quality = context!.pointee.global_quality
        defer {
            frame.pts = savedPTS
            frame.pointer.pointee.pict_type = savedType
        }
        frame.pts = 0
        try check(avcodec_send_frame(context, frame.pointer), "encode JPEG")
        try check(avcodec_receive_packet(context, packet.pointer), "encode JPEG")
        defer { packet.unref() }
        return packet.bytes
    }
}
