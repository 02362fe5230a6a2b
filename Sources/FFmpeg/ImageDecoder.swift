internal import CFFmpeg
internal import CFFmpegShim
public import MediaCore

/// Decodes the PNG and JPEG images overlays name (logos, backgrounds, slates) into
/// premultiplied RGBA. Files are hostile input: the size is read from the header and refused
/// before anything is decoded, the decoder gets the same pixel limit and refuses damaged data
/// (`AV_EF_EXPLODE`), and an image cut short (no JPEG end-of-image marker, no PNG IEND) is
/// refused rather than shown half grey.
public enum ImageDecoder {
    public enum Format: String, Sendable { case png = "PNG", jpeg = "JPEG" }

    /// The format by its signature, nil for anything else.
    public static func format(of bytes: [UInt8]) -> Format? {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        return nil
    }

    /// Width and height from a PNG's IHDR or a JPEG's first frame header (SOFn), nil when
    /// the header is not there.
    public static func headerSize(of bytes: [UInt8]) -> (width: Int, height: Int)? {
        switch format(of: bytes) {
        case .png:
            guard bytes.count >= 24, bytes[12...15].elementsEqual(Array("IHDR".utf8)) else { return nil }
            return (Int(bigEndian32(bytes, 16)), Int(bigEndian32(bytes, 20)))
        case .jpeg:
            var index = 2
            while index + 9 <= bytes.count {
                guard bytes[index] == 0xFF else { return nil }
                let marker = bytes[index + 1]
                if marker == 0xFF { index += 1; continue }
                if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) { index += 2; continue }
                let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
                // SOF0...SOF15 except DHT (C4), JPG (C8) and DAC (CC).
                if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC {
                    return (Int(bytes[index + 7]) << 8 | Int(bytes[index + 8]), Int(bytes[index + 5]) << 8 | Int(bytes[index + 6]))
                }
                guard length >= 2 else { return nil }
                index += 2 + length
            }
            return nil
        case nil:
            return nil
        }
    }

    /// Decodes `bytes` (PNG or JPEG) no larger than `maxSide` either way and `maxPixels` in
    /// all. The error's message says what is wrong in words an operator can act on.
    public static func decode(_ bytes: [UInt8], maxSide: Int, maxPixels: Int) throws(FFmpegError) -> RGBABitmap {
        func refuse(_ message: String) -> FFmpegError { FFmpegError(kind: .invalidData, operation: "decode image", message: message) }
        guard let format = format(of: bytes) else { throw refuse("not a PNG or JPEG image") }
        guard let size = headerSize(of: bytes) else { throw refuse("\(format.rawValue) header is missing or damaged") }
        guard size.width > 0, size.height > 0 else { throw refuse("\(format.rawValue) image has no pixels") }
        guard size.width <= maxSide, size.height <= maxSide, size.width * size.height <= maxPixels else {
            throw refuse("image is \(size.width)x\(size.height): over the limit of \(maxSide)x\(maxSide) and \(maxPixels) pixels")
        }
        switch format {
        case .jpeg:
            // The end-of-image marker (FF D9), possibly followed by padding.
            var end = bytes.count
            while end > 2, bytes[end - 1] == 0 { end -= 1 }
            guard end >= 4, bytes[end - 2] == 0xFF, bytes[end - 1] == 0xD9 else { throw refuse("JPEG is truncated (no end-of-image marker)") }
        case .png:
            guard bytes.count >= 12, bytes[(bytes.count - 8)..<(bytes.count - 4)].elementsEqual(Array("IEND".utf8)) else {
                throw refuse("PNG is truncated (no IEND chunk)")
            }
        }
        let frame = try decodeFrame(bytes, codec: format == .png ? AV_CODEC_ID_PNG : AV_CODEC_ID_MJPEG, maxPixels: maxPixels)
        guard frame.width == size.width, frame.height == size.height else { throw refuse("decoded size differs from the header's") }
        return try premultipliedRGBA(of: frame)
    }

    /// `bitmap` scaled to `width` x `height` (premultiplied channels scaled alike: no fringes).
    public static func scale(_ bitmap: RGBABitmap, width: Int, height: Int) throws(FFmpegError) -> RGBABitmap {
        guard width != bitmap.width || height != bitmap.height else { return bitmap }
        guard width > 0, height > 0, bitmap.width > 0, bitmap.height > 0 else { return RGBABitmap(width: max(0, width), height: max(0, height)) }
        guard let context = sws_getContext(Int32(bitmap.width), Int32(bitmap.height), AV_PIX_FMT_RGBA, Int32(width), Int32(height),
                                           AV_PIX_FMT_RGBA, SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nil, nil, nil) else {
            throw FFmpegError(kind: .unsupported, operation: "scale image", message: "no scaler for \(bitmap.width)x\(bitmap.height) -> \(width)x\(height)")
        }
        defer { sws_freeContext(context) }
        var out = try swscale(into: width, height) { destination, destinationStride in
            bitmap.pixels.withUnsafeBufferPointer { source in
                var sourcePlanes: [UnsafePointer<UInt8>?] = [source.baseAddress, nil, nil, nil]
                var sourceStrides: [Int32] = [Int32(bitmap.width * 4), 0, 0, 0]
                var destinationPlanes: [UnsafeMutablePointer<UInt8>?] = [destination, nil, nil, nil]
                var destinationStrides: [Int32] = [Int32(destinationStride), 0, 0, 0]
                _ = sws_scale(context, &sourcePlanes, &sourceStrides, 0, Int32(bitmap.height), &destinationPlanes, &destinationStrides)
            }
        }
        // A bicubic filter can ring colour just above alpha: keep the premultiplied invariant.
        for i in stride(from: 0, to: out.count, by: 4) {
            let alpha = out[i + 3]
            out[i] = min(out[i], alpha)
            out[i + 1] = min(out[i + 1], alpha)
            out[i + 2] = min(out[i + 2], alpha)
        }
        return RGBABitmap(width: width, height: height, pixels: out)
    }

    /// Runs a scale into a padded picture (swscale's vector code writes past a row's end and
    /// past the last row), then returns its pixels packed, `width * height * 4`.
    private static func swscale(into width: Int, _ height: Int,
                                _ body: (UnsafeMutablePointer<UInt8>, Int) -> Void) throws(FFmpegError) -> [UInt8] {
        let stride = (width * 4 + 63) & ~63
        guard let buffer = av_malloc(stride * (height + 2) + 64) else {
            throw FFmpegError(kind: .outOfMemory, operation: "scale image", message: "allocation failed")
        }
        defer { av_free(buffer) }
        let pointer = buffer.assumingMemoryBound(to: UInt8.self)
        pointer.initialize(repeating: 0, count: stride * (height + 2) + 64)
        body(pointer, stride)
        var out = [UInt8](repeating: 0, count: width * height * 4)
        out.withUnsafeMutableBufferPointer { packed in
            for row in 0..<height { (packed.baseAddress! + row * width * 4).update(from: pointer + row * stride, count: width * 4) }
        }
        return out
    }

    private static func bigEndian32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }

    private static func decodeFrame(_ bytes: [UInt8], codec id: AVCodecID, maxPixels: Int) throws(FFmpegError) -> Frame {
        guard let codec = avcodec_find_decoder(id) else {
            throw FFmpegError(kind: .unsupported, operation: "decode image", message: "no decoder")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw FFmpegError(kind: .outOfMemory, operation: "decode image", message: "allocation failed")
        }
        var contextPointer: UnsafeMutablePointer<AVCodecContext>? = context
        defer { avcodec_free_context(&contextPointer) }
        context.pointee.max_pixels = Int64(maxPixels)
        context.pointee.err_recognition = AV_EF_EXPLODE | AV_EF_CRCCHECK | AV_EF_BITSTREAM
        context.pointee.thread_count = 1
        try check(avcodec_open2(context, codec, nil), "open image decoder")
        let packet = Packet()
        try check(av_new_packet(packet.pointer, Int32(bytes.count)), "decode image")
        bytes.withUnsafeBufferPointer { source in
            packet.pointer.pointee.data.update(from: source.baseAddress!, count: bytes.count)
        }
        packet.pointer.pointee.flags |= AV_PKT_FLAG_KEY
        let frame = Frame()
        try check(avcodec_send_packet(context, packet.pointer), "decode image")
        try check(avcodec_send_packet(context, nil), "decode image")
        let received = avcodec_receive_frame(context, frame.pointer)
        if received < 0 { try check(received, "decode image") }
        return frame
    }

    /// The frame as premultiplied RGBA (any pixel format swscale reads).
    private static func premultipliedRGBA(of frame: Frame) throws(FFmpegError) -> RGBABitmap {
        let width = frame.width, height = frame.height
        let sourceFormat = AVPixelFormat(rawValue: frame.pointer.pointee.format)
        guard let context = sws_getContext(Int32(width), Int32(height), sourceFormat, Int32(width), Int32(height), AV_PIX_FMT_RGBA,
                                           SWS_POINT | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nil, nil, nil) else {
            throw FFmpegError(kind: .unsupported, operation: "decode image", message: "pixel format \(frame.pointer.pointee.format) cannot be converted")
        }
        defer { sws_freeContext(context) }
        // JPEG's full-range YUV, read as full range.
        if sourceFormat == AV_PIX_FMT_YUVJ420P || sourceFormat == AV_PIX_FMT_YUVJ422P || sourceFormat == AV_PIX_FMT_YUVJ444P
            || frame.pointer.pointee.color_range == AVCOL_RANGE_JPEG {
            var inverse: UnsafeMutablePointer<Int32>?
            var table: UnsafeMutablePointer<Int32>?
            var sourceRange: Int32 = 0, destinationRange: Int32 = 0, brightness: Int32 = 0, contrast: Int32 = 0, saturation: Int32 = 0
            if sws_getColorspaceDetails(context, &inverse, &sourceRange, &table, &destinationRange, &brightness, &contrast, &saturation) >= 0 {
                _ = sws_setColorspaceDetails(context, inverse, 1, table, 1, brightness, contrast, saturation)
            }
        }
        var pixels = try swscale(into: width, height) { destination, destinationStride in
            var destinationPlanes: [UnsafeMutablePointer<UInt8>?] = [destination, nil, nil, nil]
            var destinationStrides: [Int32] = [Int32(destinationStride), 0, 0, 0]
            withUnsafePointer(to: frame.pointer.pointee.data) { data in
                data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { planes in
                    withUnsafePointer(to: frame.pointer.pointee.linesize) { strides in
                        strides.withMemoryRebound(to: Int32.self, capacity: 8) { strides in
                            _ = sws_scale(context, planes, strides, 0, Int32(height), &destinationPlanes, &destinationStrides)
                        }
                    }
                }
            }
        }
        for i in stride(from: 0, to: pixels.count, by: 4) {
            let alpha = UInt32(pixels[i + 3])
            guard alpha < 255 else { continue }
            pixels[i] = UInt8((UInt32(pixels[i]) * alpha + 127) / 255)
            pixels[i + 1] = UInt8((UInt32(pixels[i + 1]) * alpha + 127) / 255)
            pixels[i + 2] = UInt8((UInt32(pixels[i + 2]) * alpha + 127) / 255)
        }
        return RGBABitmap(width: width, height: height, pixels: pixels)
    }
}
