internal import CFFmpeg
internal import CFFmpegShim
public import MediaCore
import Foundation

/// What the demuxer knows about one stream before decoding.
public struct StreamInfo: Sendable, Equatable {
    public var index: Int
    public var type: MediaType
    public var codecName: String
    public var timeBase: Rational
    public var width: Int
    public var height: Int
    public var sampleRate: Int
    public var channelCount: Int
    /// Display rotation from the container (degrees, FFmpeg's sign), 0 when absent.
    public var rotationDegrees: Int
    /// First timestamp in `timeBase`, nil when unknown.
    public var startTime: Int64?

    public init(index: Int, type: MediaType, codecName: String, timeBase: Rational, width: Int = 0, height: Int = 0,
                sampleRate: Int = 0, channelCount: Int = 0, rotationDegrees: Int = 0, startTime: Int64? = nil) {
        self.index = index
        self.type = type
        self.codecName = codecName
        self.timeBase = timeBase
        self.width = width
        self.height = height
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.rotationDegrees = rotationDegrees
        self.startTime = startTime
    }
}

public enum ReadResult: Equatable { case packet, endOfFile }

/// Reads packets from a file or URL (libavformat).
public final class Demuxer {
    private var context: UnsafeMutablePointer<AVFormatContext>?
    public let url: String
    public let streams: [StreamInfo]

    /// Opens `url` and probes its streams. `options` are libavformat options (e.g. rw_timeout).
    public init(url: String, options: [String: String] = [:]) throws(FFmpegError) {
        self.url = url
        var dictionary: OpaquePointer? = nil
        for (key, value) in options { av_dict_set(&dictionary, key, value, 0) }
        defer { av_dict_free(&dictionary) }
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        try check(avformat_open_input(&ctx, url, nil, &dictionary), "open \(url)")
        context = ctx
        do {
            try check(avformat_find_stream_info(ctx, nil), "probe \(url)")
        } catch {
            avformat_close_input(&context)
            throw error
        }
        var infos: [StreamInfo] = []
        let count = Int(ctx!.pointee.nb_streams)
        for i in 0..<count {
            let stream = ctx!.pointee.streams[i]!
            let par = stream.pointee.codecpar!.pointee
            let type: MediaType = par.codec_type == AVMEDIA_TYPE_VIDEO ? .video : par.codec_type == AVMEDIA_TYPE_AUDIO ? .audio : .other
            var rotation = 0
            var sideDataSize: Int = 0
            if let matrix = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &sideDataSize), sideDataSize >= 36 {
                let degrees = matrix.withMemoryRebound(to: Int32.self, capacity: 9) { av_display_rotation_get($0) }
                if degrees.isFinite { rotation = Int(degrees.rounded()) }
            }
            let start = stream.pointee.start_time
            infos.append(StreamInfo(
                index: i, type: type,
                codecName: String(cString: avcodec_get_name(par.codec_id)),
                timeBase: Rational(stream.pointee.time_base),
                width: Int(par.width), height: Int(par.height),
                sampleRate: Int(par.sample_rate), channelCount: Int(par.ch_layout.nb_channels),
                rotationDegrees: rotation,
                startTime: start == AVCodes.noPTS ? nil : start))
        }
        streams = infos
    }

    deinit { avformat_close_input(&context) }

    /// The stream FFmpeg considers best for `type`, if any.
    public func bestStream(_ type: MediaType) -> StreamInfo? {
        let avType = type == .video ? AVMEDIA_TYPE_VIDEO : AVMEDIA_TYPE_AUDIO
        let index = av_find_best_stream(context, avType, -1, -1, nil, 0)
        return index >= 0 ? streams[Int(index)] : nil
    }

    /// Start of the whole file in microseconds (the earliest stream start), nil when unknown.
    public var startTimeMicroseconds: Int64? {
        let start = context!.pointee.start_time
        return start == AVCodes.noPTS ? nil : start
    }

    public var durationMicroseconds: Int64? {
        let duration = context!.pointee.duration
        return duration == AVCodes.noPTS || duration <= 0 ? nil : duration
    }

    /// Reads the next packet into `packet`. Malformed data mid-file is an error; the caller
    /// decides whether to drop the source.
    public func read(into packet: Packet) throws(FFmpegError) -> ReadResult {
        packet.unref()
        let code = av_read_frame(context, packet.pointer)
        if code == AVCodes.eof { return .endOfFile }
        try check(code, "read \(url)")
        return .packet
    }

    /// A copy of a stream's codec parameters, for opening its decoder.
    public func parameters(of stream: StreamInfo) throws(FFmpegError) -> CodecParameters {
        try CodecParameters(copying: context!.pointee.streams[stream.index]!.pointee.codecpar)
    }
}
