// The picture size a keyframe announces, read from its own headers without decoding: the
// SPS of an H.264 access unit, the key frame header of VP8 (RFC 6386 §9.1). Simulcast layers
// are told apart by it, since an offer's rids say nothing of their sizes.

internal import MediaCore

public struct PictureSize: Sendable, Equatable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Width × height (saturating: the sizes come from the network).
    public var area: Int {
        let (product, overflow) = width.multipliedReportingOverflow(by: height)
        return overflow ? .max : product
    }
    public var description: String { "\(width)x\(height)" }
}

extension EncodedFrame {
    /// The size a keyframe announces; nil for delta frames, audio, and headers that do not parse.
    public var keyframePictureSize: PictureSize? {
        guard isKeyframe else { return nil }
        switch codec {
        case .h264: return Self.h264PictureSize(annexB: data)
        case .vp8: return Self.vp8PictureSize(frame: data)
        case .opus: return nil
        }
    }

    /// From the first SPS (NAL type 7) of an Annex B access unit.
    static func h264PictureSize(annexB data: [UInt8]) -> PictureSize? {
        var index = 0
        while index + 3 < data.count {
            guard data[index] == 0, data[index + 1] == 0, data[index + 2] == 1 else {
                index += 1
                continue
            }
            let start = index + 3
            guard data[start] & 0x1F == 7 else {
                index = start
                continue
            }
            var end = start + 1
            while end + 2 < data.count, !(data[end] == 0 && data[end + 1] == 0 && data[end + 2] <= 1) { end += 1 }
            if end + 2 >= data.count { end = data.count }
            guard let sps = try? AVCSequenceParameterSet(nalUnit: Array(data[start..<end])) else { return nil }
            return PictureSize(width: sps.width, height: sps.height)
        }
        return nil
    }

    /// Key frame: a 3-byte frame tag with bit 0 clear, the start code 9d 01 2a, then 14-bit
    /// width and height (little-endian, the top two bits are a scaling hint).
    static func vp8PictureSize(frame data: [UInt8]) -> PictureSize? {
        guard data.count >= 10, data[0] & 0x01 == 0, data[3] == 0x9D, data[4] == 0x01, data[5] == 0x2A else { return nil }
        let width = (Int(data[6]) | Int(data[7]) << 8) & 0x3FFF
        let height = (Int(data[8]) | Int(data[9]) << 8) & 0x3FFF
        guard width > 0, height > 0 else { return nil }
        return PictureSize(width: width, height: height)
    }
}
