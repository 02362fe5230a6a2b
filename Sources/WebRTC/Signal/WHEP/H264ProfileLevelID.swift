// H.264's `profile-level-id` (RFC 6184 §8.1): profile_idc, profile-iop (the constraint_set
// flags) and level_idc, read the way WebRTC receivers read it. libwebrtc
// (`api/video_codecs/h264_profile_level_id.cc`) and aiortc (`sdp.py`) sort the first two bytes
// into six profiles and choose a decoder by that profile, never by the exact bytes; an answer
// whose profile is not one the viewer offered gets no decoder (Chrome's "NullVideoDecoder"),
// or no common codec in aiortc. So the profile is what offer and answer must agree on.

/// The three bytes of a `profile-level-id`, or of an SPS after its NAL header.
public struct H264ProfileLevelID: Hashable, Sendable, CustomStringConvertible {
    public var profileIDC: UInt8
    /// profile-iop: constraint_set0...5 flags in the top six bits.
    public var constraintFlags: UInt8
    public var levelIDC: UInt8

    public init(profileIDC: UInt8, constraintFlags: UInt8, levelIDC: UInt8) {
        self.profileIDC = profileIDC
        self.constraintFlags = constraintFlags
        self.levelIDC = levelIDC
    }

    /// Six hex digits ("42e01f", either case); nil for anything else.
    public init?(_ text: some StringProtocol) {
        let digits = Array(text.utf8)
        guard digits.count == 6 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 6, by: 2) {
            guard let high = Self.hexValue(digits[index]), let low = Self.hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self.init(profileIDC: bytes[0], constraintFlags: bytes[1], levelIDC: bytes[2])
    }

    /// From a sequence parameter set NAL unit, header byte first (as in extradata or a keyframe):
    /// bytes 1–3 are profile_idc, the constraint flags and level_idc. Nil unless it is an SPS.
    public init?(sequenceParameterSet nalUnit: [UInt8]) {
        guard nalUnit.count >= 4, nalUnit[0] & 0x1F == 7 else { return nil }
        self.init(profileIDC: nalUnit[1], constraintFlags: nalUnit[2], levelIDC: nalUnit[3])
    }

    /// Lower-case hex, as browsers write it: "42e01f".
    public var description: String {
        [profileIDC, constraintFlags, levelIDC].map { byte in
            let text = String(byte, radix: 16)
            return byte < 16 ? "0" + text : text
        }.joined()
    }

    /// The profile a WebRTC receiver sees; nil for one it does not know (it would not decode it).
    public var profile: H264Profile? {
        H264Profile.patterns.first { $0.profileIDC == profileIDC && $0.matches(constraintFlags) }?.profile
    }

    /// Nil for a level_idc no level has.
    public var level: H264Level? {
        // Level 1b: level_idc 11 with constraint_set3 (Baseline, Main), or level_idc 9 (the High profiles).
        if levelIDC == 9 || (levelIDC == 11 && constraintFlags & 0x10 != 0) { return .level1b }
        return H264Level(levelIDC: levelIDC)
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// The profiles WebRTC receivers tell apart, in order of the tools a decoder needs.
public enum H264Profile: Int, CaseIterable, Comparable, Sendable, CustomStringConvertible {
    case constrainedBaseline, baseline, main, constrainedHigh, high, predictiveHigh444

    public static func < (lhs: H264Profile, rhs: H264Profile) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String {
        switch self {
        case .constrainedBaseline: return "Constrained Baseline"
        case .baseline: return "Baseline"
        case .main: return "Main"
        case .constrainedHigh: return "Constrained High"
        case .high: return "High"
        case .predictiveHigh444: return "High 4:4:4 Predictive"
        }
    }

    /// Whether a decoder of this profile decodes every stream of `stream` (ITU-T H.264 A.2):
    /// Constrained Baseline is within all of them; Main within High; Constrained High within
    /// High; High within High 4:4:4 Predictive (through High 10 and High 4:2:2). Baseline proper
    /// (FMO, ASO) is within none but itself.
    public func decodes(_ stream: H264Profile) -> Bool {
        if stream == self || stream == .constrainedBaseline { return true }
        switch stream {
        case .main, .constrainedHigh: return self == .high || self == .predictiveHigh444
        case .high: return self == .predictiveHigh444
        case .constrainedBaseline, .baseline, .predictiveHigh444: return false
        }
    }

    /// libwebrtc's table: profile_idc and a pattern of the constraint byte (x: either bit).
    struct Pattern {
        var profileIDC: UInt8
        var mask: UInt8
        var value: UInt8
        var profile: H264Profile

        init(_ profileIDC: UInt8, _ bits: String, _ profile: H264Profile) {
            self.profileIDC = profileIDC
            self.profile = profile
            var mask: UInt8 = 0, value: UInt8 = 0
            for character in bits {
                mask <<= 1
                value <<= 1
                if character != "x" { mask |= 1 }
                if character == "1" { value |= 1 }
            }
            self.mask = mask
            self.value = value
        }

        func matches(_ flags: UInt8) -> Bool { flags & mask == value }
    }

    static let patterns: [Pattern] = [
        Pattern(0x42, "x1xx0000", .constrainedBaseline),
        Pattern(0x4D, "1xxx0000", .constrainedBaseline),
        Pattern(0x58, "11xx0000", .constrainedBaseline),
        Pattern(0x42, "x0xx0000", .baseline),
        Pattern(0x58, "10xx0000", .baseline),
        Pattern(0x4D, "0x0x0000", .main),
        Pattern(0x64, "00000000", .high),
        Pattern(0x64, "00001100", .constrainedHigh),
        Pattern(0xF4, "00000000", .predictiveHigh444),
    ]
}

/// An H.264 level (ITU-T H.264 Table A-1), ordered; 1b sits between 1 and 1.1.
public struct H264Level: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// 10 × the level number; 11 for 1b (with constraint_set3 set, where the profile allows).
    public let levelIDC: UInt8
    public let isLevel1b: Bool

    public static let level1b = H264Level(validLevelIDC: 11, isLevel1b: true)
    /// The levels of Table A-1 up to 5.2, the ones libwebrtc and aiortc parse.
    static let defined: Set<UInt8> = [10, 11, 12, 13, 20, 21, 22, 30, 31, 32, 40, 41, 42, 50, 51, 52]

    /// Nil unless `levelIDC` names a level of Table A-1 (1b aside).
    public init?(levelIDC: UInt8) {
        guard Self.defined.contains(levelIDC) else { return nil }
        self.init(validLevelIDC: levelIDC, isLevel1b: false)
    }

    private init(validLevelIDC: UInt8, isLevel1b: Bool) {
        self.levelIDC = validLevelIDC
        self.isLevel1b = isLevel1b
    }

    private var rank: Int { isLevel1b ? 105 : Int(levelIDC) * 10 }

    public static func < (lhs: H264Level, rhs: H264Level) -> Bool { lhs.rank < rhs.rank }

    public var description: String {
        if isLevel1b { return "1b" }
        return levelIDC % 10 == 0 ? "\(levelIDC / 10)" : "\(levelIDC / 10).\(levelIDC % 10)"
    }
}
