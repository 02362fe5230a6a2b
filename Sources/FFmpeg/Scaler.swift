internal import CFFmpeg
internal import CFFmpegShim
public import MediaCore

/// Pointers into a YUV 4:2:0 picture, for drawing (fills, camera-off tiles).
public struct YUVPlanes {
    public var y: UnsafeMutablePointer<UInt8>
    public var u: UnsafeMutablePointer<UInt8>
    public var v: UnsafeMutablePointer<UInt8>
    public var yStride: Int
    public var uStride: Int
    public var vStride: Int
    public var width: Int
    public var height: Int
}

extension Frame {
    /// The planes of a YUV420P frame (the compositor's canvas).
    public var yuvPlanes: YUVPlanes {
        let f = pointer.pointee
        return YUVPlanes(y: f.data.0!, u: f.data.1!, v: f.data.2!,
                         yStride: Int(f.linesize.0), uStride: Int(f.linesize.1), vStride: Int(f.linesize.2),
                         width: Int(f.width), height: Int(f.height))
    }

    /// Fills a rectangle of a YUV420P frame with one colour (x, y, width, height even).
    public func fill(_ rect: Rect, y: UInt8, u: UInt8, v: UInt8) {
        let planes = yuvPlanes
        guard rect.width > 0, rect.height > 0 else { return }
        for row in rect.y..<(rect.y + rect.height) {
            (planes.y + row * planes.yStride + rect.x).update(repeating: y, count: rect.width)
        }
        for row in (rect.y / 2)..<((rect.y + rect.height) / 2) {
            (planes.u + row * planes.uStride + rect.x / 2).update(repeating: u, count: rect.width / 2)
            (planes.v + row * planes.vStride + rect.x / 2).update(repeating: v, count: rect.width / 2)
        }
    }

    /// Fades a rectangle of a YUV420P frame toward black (studio range: Y 16, U and V 128):
    /// `opacity` 1 keeps it, 0 leaves black. The rectangle must lie inside the frame.
    public func fade(_ rect: Rect, opacity: Double) {
        let planes = yuvPlanes
        guard rect.width > 0, rect.height > 0, rect.x >= 0, rect.y >= 0,
              rect.maxX <= planes.width, rect.maxY <= planes.height else { return }
        let keep = Int32((min(1, max(0, opacity)) * 256).rounded())
        @inline(__always) func blend(_ pointer: UnsafeMutablePointer<UInt8>, count: Int, toward base: Int32) {
            for i in 0..<count {
                let value = Int32(pointer[i])
                pointer[i] = UInt8(truncatingIfNeeded: base + (((value - base) * keep) >> 8))
            }
        }
        for row in rect.y..<rect.maxY { blend(planes.y + row * planes.yStride + rect.x, count: rect.width, toward: 16) }
        for row in (rect.y / 2)..<(rect.maxY / 2) {
            blend(planes.u + row * planes.uStride + rect.x / 2, count: rect.width / 2, toward: 128)
            blend(planes.v + row * planes.vStride + rect.x / 2, count: rect.width / 2, toward: 128)
        }
    }

    /// Reads one pixel's (Y, U, V) from a YUV420P frame, for tests and thumbnails.
    public func yuv(atX x: Int, y: Int) -> (y: UInt8, u: UInt8, v: UInt8) {
        let planes = yuvPlanes
        return (planes.y[y * planes.yStride + x], planes.u[(y / 2) * planes.uStride + x / 2], planes.v[(y / 2) * planes.vStride + x / 2])
    }
}

/// Scales a crop of a decoded frame straight into a rectangle of the output canvas: one
/// sws_scale per tile per output frame, no intermediate picture. The SwsContext is cached
/// and only rebuilt when the source format/size or the tile size changes.
///
/// libyuv's I420Scale was measured against it (benchmarks/scaler: speed, and SSIM against a
/// double-precision Lanczos-3 scale) and kept out. It wins only at exact 2x and 4x ratios,
/// which the grid's 2-pixel gap never makes: for the grid's real 1280x719 → 638x358 tile its
/// bilinear filter takes 465 µs against our 381 µs with SSIM-Y 0.932 against 0.984 on a
/// photograph, and a 1.5x upscale (360p on a 1080p 2x2 grid) is slower and worse.
public final class TileScaler {
    private var context: OpaquePointer?
    /// swscale's raised-cosine filter (SWS_X, "experimental" in ffmpeg's scale flags, exponent
    /// 1: a Hann window one output pixel either side of the centre, on the output grid when
    /// shrinking and on the source grid when enlarging). Its ends fall to zero smoothly, so
    /// swscale trims them and a row needs 4 taps at the grid's 2.006:1 (1280x719 -> 638x358),
    /// where bilinear, whose triangle swscale widens to twice the ratio, needs 8.
    /// At that ratio it keeps 0.79 of a 0.3-cycle-per-pixel pattern (bilinear 0.74, area
    /// averaging 0.83) and lets 0.12 of a 0.8-cycle one through as aliasing (bilinear 0.06,
    /// area 0.18). benchmarks/scaler, against a Lanczos-3 scale, on a photograph: (a) tile
    /// SSIM-Y 0.984 (bilinear 0.977, area 0.983) at area's speed, 1.35x bilinear's; (b) tile
    /// 0.986 (0.980, 0.986); a 4x picture-in-picture 0.987 (0.981, 0.979) at bilinear's
    /// speed; 1.5x and 2x enlargements 0.979 and 0.974 (both others 0.976 and 0.971) at the
    /// same speed. After x264 at the scenarios' bitrates (benchmarks/run.sh) it beats
    /// bilinear's SSIM, where area averaging fell short at 2:1: sensor noise it passes
    /// costs bits.
    private let flags = SWS_X
    // Pointer/stride arrays for sws_scale, allocated once (no per-frame allocation).
    private let srcPointers = UnsafeMutablePointer<UnsafePointer<UInt8>?>.allocate(capacity: 4)
    private let srcStrides = UnsafeMutablePointer<Int32>.allocate(capacity: 4)
    private let dstPointers = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: 4)
    private let dstStrides = UnsafeMutablePointer<Int32>.allocate(capacity: 4)
    /// swscale's SIMD output writes whole vectors, so up to `overrun` bytes right of the
    /// destination may be clobbered. Those bytes belong to a neighbouring tile or the
    /// background: they are saved before scaling and put back after.
    static let overrun = 32
    private var guardBytes = UnsafeMutablePointer<UInt8>.allocate(capacity: 0)
    private var guardCapacity = 0

    public init() {}

    deinit {
        guardBytes.deallocate()
        sws_freeContext(context)
        srcPointers.deallocate()
        srcStrides.deallocate()
        dstPointers.deallocate()
        dstStrides.deallocate()
    }

    /// Scales `source` cropped to `crop` into `destination` of `canvas` (YUV420P).
    /// Crop and destination are clamped to even coordinates by the caller.
    public func scale(_ source: Frame, crop: Rect, into canvas: Frame, destination: Rect) throws(FFmpegError) {
        let src = source.pointer.pointee
        let format = AVPixelFormat(rawValue: src.format)
        guard let descriptor = av_pix_fmt_desc_get(format) else {
            throw FFmpegError(kind: .unsupported, operation: "scale", message: "unknown pixel format \(src.format)")
        }
        context = sws_getCachedContext(context, Int32(crop.width), Int32(crop.height), format,
                                       Int32(destination.width), Int32(destination.height), AV_PIX_FMT_YUV420P,
                                       flags, nil, nil, nil)
        guard let context else {
            throw FFmpegError(kind: .unsupported, operation: "scale", message: "no scaler for \(crop.width)x\(crop.height) format \(src.format)")
        }
        let desc = descriptor.pointee
        let planeCount = Int(av_pix_fmt_count_planes(format))
        srcPointers.update(repeating: nil, count: 4)
        srcStrides.update(repeating: 0, count: 4)
        withUnsafeBytes(of: src.data) { dataRaw in
            withUnsafeBytes(of: src.linesize) { linesRaw in
                let data = dataRaw.bindMemory(to: UnsafeMutablePointer<UInt8>?.self)
                let lines = linesRaw.bindMemory(to: Int32.self)
                for plane in 0..<min(planeCount, 4) {
                    guard let base = data[plane] else { continue }
                    let isChroma = (plane == 1 || plane == 2) && (desc.flags & UInt64(AV_PIX_FMT_FLAG_RGB)) == 0
                    let shiftW = isChroma ? Int(desc.log2_chroma_w) : 0
                    let shiftH = isChroma ? Int(desc.log2_chroma_h) : 0
                    let step = stepBytes(desc, plane: plane)
                    let offset = (crop.y >> shiftH) * Int(lines[plane]) + (crop.x >> shiftW) * step
                    srcPointers[plane] = UnsafePointer(base + offset)
                    srcStrides[plane] = lines[plane]
                }
            }
        }
        let planes = canvas.yuvPlanes
        dstPointers[0] = planes.y + destination.y * planes.yStride + destination.x
        dstPointers[1] = planes.u + (destination.y / 2) * planes.uStride + destination.x / 2
        dstPointers[2] = planes.v + (destination.y / 2) * planes.vStride + destination.x / 2
        dstPointers[3] = nil
        dstStrides[0] = Int32(planes.yStride)
        dstStrides[1] = Int32(planes.uStride)
        dstStrides[2] = Int32(planes.vStride)
        dstStrides[3] = 0
        let luma = GuardBand(plane: planes.y, stride: planes.yStride, planeWidth: planes.width,
                             x: destination.x + destination.width, y: destination.y, rows: destination.height)
        let chromaU = GuardBand(plane: planes.u, stride: planes.uStride, planeWidth: (planes.width + 1) / 2,
                                x: (destination.x + destination.width) / 2, y: destination.y / 2, rows: destination.height / 2)
        let chromaV = GuardBand(plane: planes.v, stride: planes.vStride, planeWidth: (planes.width + 1) / 2,
                                x: (destination.x + destination.width) / 2, y: destination.y / 2, rows: destination.height / 2)
        let needed = luma.byteCount + chromaU.byteCount + chromaV.byteCount
        if needed > guardCapacity {
            guardBytes.deallocate()
            guardBytes = .allocate(capacity: needed)
            guardCapacity = needed
        }
        luma.save(to: guardBytes)
        chromaU.save(to: guardBytes + luma.byteCount)
        chromaV.save(to: guardBytes + luma.byteCount + chromaU.byteCount)
        let rows = sws_scale(context, srcPointers, srcStrides, 0, Int32(crop.height), dstPointers, dstStrides)
        luma.restore(from: guardBytes)
        chromaU.restore(from: guardBytes + luma.byteCount)
        chromaV.restore(from: guardBytes + luma.byteCount + chromaU.byteCount)
        if rows < 0 { throw FFmpegError(code: rows, operation: "scale") }
    }

    private func stepBytes(_ desc: AVPixFmtDescriptor, plane: Int) -> Int {
        var step = 1
        withUnsafeBytes(of: desc.comp) { raw in
            let components = raw.bindMemory(to: AVComponentDescriptor.self)
            for index in 0..<Int(desc.nb_components) where Int(components[index].plane) == plane {
                step = Int(components[index].step)
                break
            }
        }
        return step
    }
}

/// The bytes just right of a destination rectangle in one plane.
private struct GuardBand {
    let plane: UnsafeMutablePointer<UInt8>
    let stride: Int
    let x: Int
    let y: Int
    let rows: Int
    let width: Int

    init(plane: UnsafeMutablePointer<UInt8>, stride: Int, planeWidth: Int, x: Int, y: Int, rows: Int) {
        self.plane = plane
        self.stride = stride
        self.x = x
        self.y = y
        self.rows = rows
        width = max(0, min(TileScaler.overrun, planeWidth - x))
    }

    var byteCount: Int { width * rows }

    func save(to buffer: UnsafeMutablePointer<UInt8>) {
        guard width > 0 else { return }
        for row in 0..<rows { (buffer + row * width).update(from: plane + (y + row) * stride + x, count: width) }
    }

    func restore(from buffer: UnsafeMutablePointer<UInt8>) {
        guard width > 0 else { return }
        for row in 0..<rows { (plane + (y + row) * stride + x).update(from: buffer + row * width, count: width) }
    }
}
