internal import CFFmpeg
internal import CFFmpegShim

/// Converts decoded audio of any rate/layout/format to planar float stereo at the mix rate.
/// Rebuilds itself when the input format changes mid-stream (the tail of the old format is
/// flushed first, so no samples are lost at the switch).
public final class Resampler {
    private var context: OpaquePointer?
    private var inputKey: (rate: Int32, format: Int32, channels: Int32, mask: UInt64)?
    public let outputRate: Int
    private let outputLayout: UnsafeMutablePointer<AVChannelLayout>
    private let outPointers = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: 2)

    public init(outputRate: Int = 48_000) {
        self.outputRate = outputRate
        outputLayout = .allocate(capacity: 1)
        outputLayout.initialize(to: AVChannelLayout())
        cffshim_channel_layout_default(outputLayout, 2)
    }

    deinit {
        swr_free(&context)
        av_channel_layout_uninit(outputLayout)
        outputLayout.deallocate()
        outPointers.deallocate()
    }

    /// Upper bound of output samples for `inputSamples` more input (plus buffered delay).
    public func maxOutputSamples(forInput inputSamples: Int) -> Int {
        guard let context else { return inputSamples * 8 + 64 }
        return Int(swr_get_out_samples(context, Int32(inputSamples))) + 64
    }

    /// Converts `frame` into `left`/`right` (capacity samples each); returns samples written.
    /// When the input format changed, the old tail is flushed into the buffers first.
    public func convert(_ frame: Frame, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, capacity: Int) throws(FFmpegError) -> Int {
        let f = frame.pointer.pointee
        let key = (f.sample_rate, f.format, f.ch_layout.nb_channels, f.ch_layout.order == AV_CHANNEL_ORDER_NATIVE ? f.ch_layout.u.mask : 0)
        var written = 0
        if inputKey == nil || inputKey! != key {
            if context != nil { written = try drain(left: left, right: right, capacity: capacity) }
            try configure(for: frame)
            inputKey = key
        }
        outPointers[0] = UnsafeMutableRawPointer(left + written).assumingMemoryBound(to: UInt8.self)
        outPointers[1] = UnsafeMutableRawPointer(right + written).assumingMemoryBound(to: UInt8.self)
        let input = withUnsafePointer(to: frame.pointer.pointee.extended_data) { $0.pointee }
        let count = swr_convert(context, outPointers, Int32(capacity - written),
                                UnsafeMutableRawPointer(input!).assumingMemoryBound(to: UnsafePointer<UInt8>?.self),
                                f.nb_samples)
        try check(count, "resample audio")
        return written + Int(count)
    }

    /// Flushes the samples still buffered inside the resampler.
    public func drain(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, capacity: Int) throws(FFmpegError) -> Int {
        guard let context else { return 0 }
        outPointers[0] = UnsafeMutableRawPointer(left).assumingMemoryBound(to: UInt8.self)
        outPointers[1] = UnsafeMutableRawPointer(right).assumingMemoryBound(to: UInt8.self)
        let count = swr_convert(context, outPointers, Int32(capacity), nil, 0)
        return Int(try check(count, "flush resampler"))
    }

    /// Stretches (positive `samples`) or squeezes the output by `samples` spread evenly over
    /// the next `distance` output samples: a live publisher's clock drifts against ours, and
    /// this absorbs it without a click, at a rate far below what the ear notices.
    public func compensate(samples: Int, over distance: Int) throws(FFmpegError) {
        guard let context, distance > 0 else { return }
        try check(swr_set_compensation(context, Int32(samples), Int32(distance)), "audio drift compensation")
    }

    private func configure(for frame: Frame) throws(FFmpegError) {
        swr_free(&context)
        var inputLayout = AVChannelLayout()
        defer { av_channel_layout_uninit(&inputLayout) }
        if frame.pointer.pointee.ch_layout.nb_channels > 0 {
            try check(av_channel_layout_copy(&inputLayout, &frame.pointer.pointee.ch_layout), "audio layout")
        } else {
            cffshim_channel_layout_default(&inputLayout, 1)
        }
        if inputLayout.order == AV_CHANNEL_ORDER_UNSPEC {
            let channels = inputLayout.nb_channels
            av_channel_layout_uninit(&inputLayout)
            cffshim_channel_layout_default(&inputLayout, channels)
        }
        var ctx: OpaquePointer? = nil
        try check(swr_alloc_set_opts2(&ctx, outputLayout, AV_SAMPLE_FMT_FLTP, Int32(outputRate),
                                      &inputLayout, AVSampleFormat(rawValue: frame.pointer.pointee.format),
                                      frame.pointer.pointee.sample_rate, 0, nil), "configure resampler")
        context = ctx
        try check(swr_init(ctx), "configure resampler \(frame.pointer.pointee.sample_rate) Hz")
    }
}
