// Bit-level reading of codec headers: an exp-Golomb bit reader and the H.264 sequence
// parameter set (picture size, profile), shared by RTMP ingest (the AVC configuration
// record) and WebRTC ingest (the SPS in a keyframe, to tell simulcast layers apart).

public enum BitstreamError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The data ended inside the named structure.
    case truncated(String)
    case malformed(String)

    public var description: String {
        switch self {
        case .truncated(let what): return "truncated: \(what)"
        case .malformed(let what): return "malformed: \(what)"
        }
    }
}

/// Picture size and profile from an H.264 sequence parameter set (ITU-T H.264 7.3.2.1.1).
public struct AVCSequenceParameterSet: Equatable, Sendable {
    public var profileIDC: UInt8
    /// constraint_set0...5 flags, as the byte after profile_idc.
    public var constraintFlags: UInt8
    public var levelIDC: UInt8
    /// 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4.
    public var chromaFormatIDC: Int
    public var bitDepthLuma: Int
    public var bitDepthChroma: Int
    /// False for interlaced (field or MBAFF) coding.
    public var frameMBsOnly: Bool
    /// Displayed size, after frame cropping.
    public var width: Int
    public var height: Int

    /// Profiles whose SPS carries chroma format, bit depths and scaling lists.
    private static let highProfiles: Set<UInt8> = [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]

    /// `nalUnit` starts with the NAL header byte (type 7), as in the configuration record.
    public init(nalUnit: [UInt8]) throws(BitstreamError) {
        guard let header = nalUnit.first else { throw .truncated("SPS") }
        guard header & 0x1F == 7 else { throw .malformed("NAL unit type \(header & 0x1F) is not an SPS") }
        var bits = BitReader(Self.removingEmulationPrevention(nalUnit.dropFirst()))
        profileIDC = try bits.readByte()
        constraintFlags = try bits.readByte()
        levelIDC = try bits.readByte()
        _ = try bits.readUnsigned()  // seq_parameter_set_id

        var chromaFormat = 1
        var separateColourPlane = false
        bitDepthLuma = 8
        bitDepthChroma = 8
        if Self.highProfiles.contains(profileIDC) {
            chromaFormat = try bits.readUnsigned(max: 3)
            if chromaFormat == 3 {
                separateColourPlane = try bits.readFlag()
            }
            bitDepthLuma = try bits.readUnsigned(max: 6) + 8
            bitDepthChroma = try bits.readUnsigned(max: 6) + 8
            _ = try bits.readFlag()  // qpprime_y_zero_transform_bypass_flag
            if try bits.readFlag() {  // seq_scaling_matrix_present_flag
                for index in 0..<(chromaFormat == 3 ? 12 : 8) {
                    if try bits.readFlag() {  // seq_scaling_list_present_flag[index]
                        try bits.skipScalingList(size: index < 6 ? 16 : 64)
                    }
                }
            }
        }
        chromaFormatIDC = chromaFormat

        _ = try bits.readUnsigned()  // log2_max_frame_num_minus4
        let pictureOrderCountType = try bits.readUnsigned(max: 2)
        if pictureOrderCountType == 0 {
            _ = try bits.readUnsigned()  // log2_max_pic_order_cnt_lsb_minus4
        } else if pictureOrderCountType == 1 {
            _ = try bits.readFlag()  // delta_pic_order_always_zero_flag
            _ = try bits.readSigned()  // offset_for_non_ref_pic
            _ = try bits.readSigned()  // offset_for_top_to_bottom_field
            let cycleLength = try bits.readUnsigned(max: 255)
            for _ in 0..<cycleLength {
                _ = try bits.readSigned()  // offset_for_ref_frame
            }
        }
        _ = try bits.readUnsigned()  // max_num_ref_frames
        _ = try bits.readFlag()  // gaps_in_frame_num_value_allowed_flag
        let widthInMacroblocks = try bits.readUnsigned(max: 1 << 16) + 1
        let heightInMapUnits = try bits.readUnsigned(max: 1 << 16) + 1
        frameMBsOnly = try bits.readFlag()
        if !frameMBsOnly {
            _ = try bits.readFlag()  // mb_adaptive_frame_field_flag
        }
        _ = try bits.readFlag()  // direct_8x8_inference_flag

        var fullWidth = widthInMacroblocks * 16
        var fullHeight = (frameMBsOnly ? 1 : 2) * heightInMapUnits * 16
        if try bits.readFlag() {  // frame_cropping_flag
            let left = try bits.readUnsigned(), right = try bits.readUnsigned()
            let top = try bits.readUnsigned(), bottom = try bits.readUnsigned()
            // Crop offsets count in chroma samples (luma samples for monochrome / 4:4:4
            // coded as separate planes), and in field lines for interlaced coding.
            let chromaArrayType = separateColourPlane ? 0 : chromaFormat
            let subWidth = chromaArrayType == 1 || chromaArrayType == 2 ? 2 : 1
            let subHeight = chromaArrayType == 1 ? 2 : 1
            let unitX = subWidth
            let unitY = subHeight * (frameMBsOnly ? 1 : 2)
            fullWidth -= unitX * (left + right)
            fullHeight -= unitY * (top + bottom)
            guard fullWidth > 0, fullHeight > 0 else { throw .malformed("SPS cropping exceeds the picture") }
        }
        width = fullWidth
        height = fullHeight
    }

    /// Drops the 0x03 of every 0x00 0x00 0x03 sequence (H.264 7.4.1).
    public static func removingEmulationPrevention(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var zeros = 0
        for byte in bytes {
            if zeros >= 2, byte == 0x03 {
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
            output.append(byte)
        }
        return output
    }
}

/// Exp-Golomb bit reader over an RBSP.
public struct BitReader: Sendable {
    private let bytes: [UInt8]
    private var bitOffset = 0

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    public mutating func readBit() throws(BitstreamError) -> Int {
        guard bitOffset < bytes.count * 8 else { throw .truncated("SPS bits") }
        defer { bitOffset += 1 }
        return Int(bytes[bitOffset >> 3] >> (7 - UInt8(bitOffset & 7)) & 1)
    }

    public mutating func readFlag() throws(BitstreamError) -> Bool {
        try readBit() == 1
    }

    public mutating func readBits(_ count: Int) throws(BitstreamError) -> Int {
        var value = 0
        for _ in 0..<count {
            value = value << 1 | (try readBit())
        }
        return value
    }

    public mutating func readByte() throws(BitstreamError) -> UInt8 {
        UInt8(try readBits(8))
    }

    /// ue(v). Codes longer than 32 bits do not occur in a valid SPS.
    public mutating func readUnsigned(max: Int = Int(UInt32.max) - 1) throws(BitstreamError) -> Int {
        var leadingZeros = 0
        while try readBit() == 0 {
            leadingZeros += 1
            guard leadingZeros <= 31 else { throw .malformed("exp-Golomb code too long") }
        }
        let value = (1 << leadingZeros) - 1 + (try readBits(leadingZeros))
        guard value <= max else { throw .malformed("SPS value \(value) out of range") }
        return value
    }

    /// se(v).
    public mutating func readSigned() throws(BitstreamError) -> Int {
        let code = try readUnsigned()
        return code & 1 == 1 ? (code + 1) / 2 : -(code / 2)
    }

    /// scaling_list(): only its length in bits matters here.
    public mutating func skipScalingList(size: Int) throws(BitstreamError) {
        var lastScale = 8
        var nextScale = 8
        for _ in 0..<size {
            if nextScale != 0 {
                let delta = try readSigned()
                nextScale = ((lastScale + delta) % 256 + 256) % 256
            }
            if nextScale != 0 {
                lastScale = nextScale
            }
        }
    }
}
