// What a decoder needs to open: FFmpeg's AVCodecParameters, either copied from a demuxed
// stream (recorded stages) or built from a live publisher's sequence headers (RTMP's
// AVCDecoderConfigurationRecord, AAC AudioSpecificConfig ...), where no demuxer exists.
internal import CFFmpeg
internal import CFFmpegShim
public import MediaCore

extension CompressedCodec {
    var id: AVCodecID {
        switch self {
        case .h264: AV_CODEC_ID_H264
        case .hevc: AV_CODEC_ID_HEVC
        case .av1: AV_CODEC_ID_AV1
        case .vp8: AV_CODEC_ID_VP8
        case .vp9: AV_CODEC_ID_VP9
        case .aac: AV_CODEC_ID_AAC
        case .mp3: AV_CODEC_ID_MP3
        case .opus: AV_CODEC_ID_OPUS
        }
    }

    /// Whether this FFmpeg build can decode it (Debian's has all of them; others may not).
    public var isDecodable: Bool { avcodec_find_decoder(id) != nil }
}

/// An owned AVCodecParameters (freed once in `deinit`).
public final class CodecParameters {
    let pointer: UnsafeMutablePointer<AVCodecParameters>

    /// A copy of a demuxed stream's parameters.
    init(copying source: UnsafePointer<AVCodecParameters>) throws(FFmpegError) {
        guard let parameters = avcodec_parameters_alloc() else {
            throw FFmpegError(kind: .outOfMemory, operation: "codec parameters", message: "allocation failed")
        }
        pointer = parameters
        try check(avcodec_parameters_copy(parameters, source), "copy codec parameters")
    }

    /// Parameters for a live stream, from its configuration record.
    public init(_ configuration: CodecConfiguration) throws(FFmpegError) {
        guard let parameters = avcodec_parameters_alloc() else {
            throw FFmpegError(kind: .outOfMemory, operation: "codec parameters", message: "allocation failed")
        }
        pointer = parameters
        parameters.pointee.codec_type = configuration.codec.mediaType == .video ? AVMEDIA_TYPE_VIDEO : AVMEDIA_TYPE_AUDIO
        parameters.pointee.codec_id = configuration.codec.id
        parameters.pointee.width = Int32(configuration.width)
        parameters.pointee.height = Int32(configuration.height)
        parameters.pointee.sample_rate = Int32(configuration.sampleRate)
        if configuration.channelCount > 0 {
            cffshim_channel_layout_default(&parameters.pointee.ch_layout, Int32(configuration.channelCount))
        }
        if !configuration.extradata.isEmpty {
            // FFmpeg reads extradata with bitstream readers that may over-read: pad it.
            let size = configuration.extradata.count
            guard let buffer = av_mallocz(size + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
                throw FFmpegError(kind: .outOfMemory, operation: "codec extradata", message: "allocation failed")
            }
            configuration.extradata.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: size) }
            parameters.pointee.extradata = buffer.assumingMemoryBound(to: UInt8.self)
            parameters.pointee.extradata_size = Int32(size)
        }
    }

    deinit {
        var parameters: UnsafeMutablePointer<AVCodecParameters>? = pointer
        avcodec_parameters_free(&parameters)
    }

    public var codecName: String { String(cString: avcodec_get_name(pointer.pointee.codec_id)) }

    /// The codec, when it is one live ingest knows.
    public var compressedCodec: CompressedCodec? {
        CompressedCodec.allCases.first { $0.id == pointer.pointee.codec_id }
    }

    /// The configuration record (avcC, AudioSpecificConfig ...), empty when there is none.
    public var extradata: [UInt8] {
        guard let data = pointer.pointee.extradata, pointer.pointee.extradata_size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(pointer.pointee.extradata_size)))
    }
}

extension Packet {
    /// Replaces this packet's payload with a copy of `bytes` (padded as FFmpeg requires).
    /// Timestamps and flags are reset; the caller sets them.
    public func fill(_ bytes: UnsafeRawBufferPointer) throws(FFmpegError) {
        av_packet_unref(pointer)
        try check(av_new_packet(pointer, Int32(bytes.count)), "allocate packet")
        if let base = bytes.baseAddress, bytes.count > 0 {
            UnsafeMutableRawPointer(pointer.pointee.data).copyMemory(from: base, byteCount: bytes.count)
        }
    }

    /// Replaces this packet's payload with a copy of `bytes`.
    public func fill(_ bytes: [UInt8]) throws(FFmpegError) {
        av_packet_unref(pointer)
        try check(av_new_packet(pointer, Int32(bytes.count)), "allocate packet")
        if !bytes.isEmpty {
            bytes.withUnsafeBytes { UnsafeMutableRawPointer(pointer.pointee.data).copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
        }
    }

    /// Attaches a new configuration record: the decoder re-reads its parameter sets from it
    /// before decoding this packet (a live publisher changed resolution or sample rate).
    public func attachNewExtradata(_ bytes: [UInt8]) throws(FFmpegError) {
        guard !bytes.isEmpty else { return }
        guard let side = av_packet_new_side_data(pointer, AV_PKT_DATA_NEW_EXTRADATA, bytes.count) else {
            throw FFmpegError(kind: .outOfMemory, operation: "packet side data", message: "allocation failed")
        }
        bytes.withUnsafeBytes { UnsafeMutableRawPointer(side).copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
    }
}
