// What network outputs (RTMP/RTMPS) need beyond a file muxer: a deadline that aborts blocking
// socket I/O, a snapshot of each encoder's parameters that another thread can mux from, and
// a classification of network failures so callers never see raw AVERROR codes.
internal import CFFmpeg
internal import CFFmpegShim
#if canImport(Glibc)
internal import Glibc
#endif
public import MediaCore
import Synchronization

/// A deadline for the blocking I/O of one `Muxer`. libavformat polls the interrupt callback
/// about every 100 ms while it waits on a socket (connect, handshake, write); once the
/// deadline has passed, or after `abort()`, the call returns an error whose
/// `networkCondition` is `.interrupted`. This is how a stalled receiver is detected: a write
/// that makes no progress for the armed time gives up instead of blocking forever.
public final class IOInterrupt: Sendable {
    private let deadline = Atomic<Int64>(.max)
    private let aborted = Atomic<Bool>(false)

    public init() {}

    /// Blocking calls made from now on give up after `timeout` without progress.
    public func arm(timeout: MediaTime) {
        deadline.store(IOInterrupt.monotonicMicroseconds() &+ timeout.microsecondsValue, ordering: .relaxed)
    }

    /// No deadline (until armed again).
    public func disarm() { deadline.store(.max, ordering: .relaxed) }

    /// Every blocking call on this output returns at once, now and later (used to tear down
    /// a broken connection without waiting for its close handshake).
    public func abort() { aborted.store(true, ordering: .relaxed) }

    public var isAborted: Bool { aborted.load(ordering: .relaxed) }

    var isDue: Bool {
        aborted.load(ordering: .relaxed) || IOInterrupt.monotonicMicroseconds() >= deadline.load(ordering: .relaxed)
    }

    static func monotonicMicroseconds() -> Int64 { av_gettime_relative() }
}

/// The C callback libavformat calls; `opaque` is an unretained `IOInterrupt` kept alive by
/// the muxer that registered it.
let ioInterruptCallback: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { opaque in
    guard let opaque else { return 0 }
    return Unmanaged<IOInterrupt>.fromOpaque(opaque).takeUnretainedValue().isDue ? 1 : 0
}

/// A copy of an encoder's stream parameters (codec, size, extradata ...) and time base,
/// taken once on the media thread so a sender thread can build muxers (one per connection)
/// without touching the live encoder.
public final class StreamParameters: @unchecked Sendable {
    // Immutable after init; only read (copied into new streams) afterwards.
    let pointer: UnsafeMutablePointer<AVCodecParameters>
    public let timeBase: Rational
    /// The encoder's `primingTicks` (0 for a stream copy: its timestamps are as they came).
    public let primingTicks: Int64

    public init(of encoder: Encoder) throws(FFmpegError) {
        guard let parameters = avcodec_parameters_alloc() else {
            throw FFmpegError(kind: .outOfMemory, operation: "copy \(encoder.codecName) parameters", message: "allocation failed")
        }
        pointer = parameters
        timeBase = encoder.timeBase
        primingTicks = encoder.primingTicks
        try check(avcodec_parameters_from_context(parameters, encoder.context), "copy \(encoder.codecName) parameters")
    }

    /// A compressed stream as it arrived (stream copy, no encoder): its parameters, with
    /// `extradata` in place of theirs when given (H.264 parameter sets found in band).
    public init(copying parameters: CodecParameters, timeBase: Rational, extradata: [UInt8]? = nil,
                size: (width: Int, height: Int)? = nil) throws(FFmpegError) {
        guard let copy = avcodec_parameters_alloc() else {
            throw FFmpegError(kind: .outOfMemory, operation: "copy \(parameters.codecName) parameters", message: "allocation failed")
        }
        pointer = copy
        self.timeBase = timeBase
        primingTicks = 0
        try check(avcodec_parameters_copy(copy, parameters.pointer), "copy \(parameters.codecName) parameters")
        if let size {
            copy.pointee.width = Int32(clamping: size.width)
            copy.pointee.height = Int32(clamping: size.height)
        }
        if let extradata, !extradata.isEmpty {
            av_freep(&copy.pointee.extradata)
            guard let buffer = av_mallocz(extradata.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
                throw FFmpegError(kind: .outOfMemory, operation: "codec extradata", message: "allocation failed")
            }
            extradata.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: extradata.count) }
            copy.pointee.extradata = buffer.assumingMemoryBound(to: UInt8.self)
            copy.pointee.extradata_size = Int32(extradata.count)
        }
    }

    public var hasExtradata: Bool { pointer.pointee.extradata_size > 0 }

    deinit {
        var parameters: UnsafeMutablePointer<AVCodecParameters>? = pointer
        avcodec_parameters_free(&parameters)
    }
}

extension FFmpegError {
    /// What went wrong on the network, when the failure was a network one.
    public enum NetworkCondition: Sendable, Equatable {
        case connectionRefused
        case hostUnreachable
        /// The interrupt deadline passed (no progress) or the output was aborted.
        case interrupted
        case timedOut
        /// The peer closed or reset the connection (EOF, ECONNRESET, EPIPE).
        case closedByPeer
        /// Another I/O error (EIO, unknown RTMP protocol errors ...).
        case otherIO
    }

    public var networkCondition: NetworkCondition? {
        switch code {
        case 0: return nil
        case cffshim_averror(ECONNREFUSED): return .connectionRefused
        case cffshim_averror(EHOSTUNREACH), cffshim_averror(ENETUNREACH), cffshim_averror(EADDRNOTAVAIL):
            return .hostUnreachable
        case cffshim_error_exit(): return .interrupted
        case cffshim_averror(ETIMEDOUT): return .timedOut
        case AVCodes.eof, cffshim_averror(ECONNRESET), cffshim_averror(EPIPE), cffshim_averror(ECONNABORTED):
            return .closedByPeer
        default:
            return kind == .io || kind == .other ? .otherIO : nil
        }
    }
}
