// `WxH@FPS:BITRATE` (e.g. `1280x720@30:2500000`, `1920x1080@29.97:6M`) parsed and checked
// against the EncoderConfiguration limits of the IVS model. Pure.

public import MediaCore

public struct EncoderSpec: Equatable, Sendable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public var frameRate: Rational
    public var bitrate: Int

    /// IVS defaults: 1280x720, 30 fps, 2.5 Mbps.
    public static let `default` = EncoderSpec(width: 1280, height: 720, frameRate: Rational(30, 1), bitrate: 2_500_000)

    public init(width: Int, height: Int, frameRate: Rational, bitrate: Int) {
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.bitrate = bitrate
    }

    /// x264 threads for this canvas: 1 up to 640x360, else 2. x264's own choice (1.5 per
    /// core) gives every composition on a big host dozens of frame threads, each holding
    /// frames; measured on 2 cores (release, 30 s, 12 participants), 2 threads encode 720p and
    /// 1080p as fast as 3 with 10 and 21 MiB less RSS, 4 are slower, and at 360p one thread
    /// costs the least CPU. A live composition needs real time, not more.
    public var defaultEncoderThreads: Int { width * height <= 640 * 360 ? 1 : 2 }

    public var description: String { "\(width)x\(height)@\(EncoderSpec.formatRate(frameRate)):\(bitrate)" }

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case malformed(String)
        case invalid(field: String, message: String)

        public var description: String {
            switch self {
            case .malformed(let text): return "'\(text)' is not WIDTHxHEIGHT@FPS:BITRATE (e.g. 1280x720@30:2500000)"
            case .invalid(let field, let message): return "\(field): \(message)"
            }
        }
    }

    /// Parses and validates. Bitrate accepts a `k`/`M` suffix.
    public static func parse(_ text: String) throws(ParseError) -> EncoderSpec {
        let sizeAndRest = text.split(separator: "@", omittingEmptySubsequences: false)
        guard sizeAndRest.count == 2 else { throw .malformed(text) }
        let size = sizeAndRest[0].lowercased().split(separator: "x", omittingEmptySubsequences: false)
        let rateAndBitrate = sizeAndRest[1].split(separator: ":", omittingEmptySubsequences: false)
        guard size.count == 2, rateAndBitrate.count == 2,
              let width = Int(size[0]), let height = Int(size[1]),
              let frameRate = parseRate(String(rateAndBitrate[0])),
              let bitrate = parseBitrate(String(rateAndBitrate[1]))
        else { throw .malformed(text) }
        let spec = EncoderSpec(width: width, height: height, frameRate: frameRate, bitrate: bitrate)
        try spec.validate()
        return spec
    }

    /// The model's limits: width/height 2...1920 and even, width×height ≤ 2,073,600,
    /// framerate 1...60, bitrate 1...8,500,000.
    public func validate() throws(ParseError) {
        for (field, value) in [("width", width), ("height", height)] {
            if value < 2 || value > 1920 { throw .invalid(field: field, message: "\(value) is outside 2...1920") }
            if value % 2 != 0 { throw .invalid(field: field, message: "\(value) must be even") }
        }
        if width * height > 2_073_600 {
            throw .invalid(field: "width*height", message: "\(width * height) pixels exceeds 2073600 (1920x1080)")
        }
        if frameRate.numerator < frameRate.denominator || frameRate.numerator > 60 * frameRate.denominator {
            throw .invalid(field: "framerate", message: "\(EncoderSpec.formatRate(frameRate)) is outside 1...60")
        }
        if bitrate < 1 || bitrate > 8_500_000 {
            throw .invalid(field: "bitrate", message: "\(bitrate) is outside 1...8500000")
        }
    }

    /// "30" → 30/1, "29.97" → 30000/1001, "59.94" → 60000/1001, "12.5" → 25/2.
    public static func parseRate(_ text: String) -> Rational? {
        if let whole = Int64(text) { return whole > 0 ? Rational(whole, 1) : nil }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let whole = Int64(parts[0]), !parts[1].isEmpty, parts[1].count <= 3,
              parts[1].allSatisfy(\.isNumber), let fraction = Int64(parts[1]) else { return nil }
        let scale = Int64([1, 10, 100, 1000][parts[1].count])
        // Overflow-checked: absurd input is rejected, not a crash.
        let (scaled, o1) = whole.multipliedReportingOverflow(by: scale)
        let (sum, o2) = scaled.addingReportingOverflow(fraction)
        let (thousandths, o3) = sum.multipliedReportingOverflow(by: 1000 / scale)
        guard !o1, !o2, !o3 else { return nil }
        // NTSC rates: N×1000/1001 is written N-0.03 (29.97, 59.94, 23.976).
        for base: Int64 in [24, 30, 48, 60] where abs(base * 1_000_000 / 1001 - thousandths) <= 10 {
            return Rational(base * 1000, 1001)
        }
        return thousandths > 0 ? Rational(thousandths, 1000) : nil
    }

    static func parseBitrate(_ text: String) -> Int? {
        let lower = text.lowercased()
        // Overflow-checked: absurd input is rejected, not a crash.
        func times(_ value: Int, _ factor: Int) -> Int? {
            let (product, overflow) = value.multipliedReportingOverflow(by: factor)
            return overflow ? nil : product
        }
        if lower.hasSuffix("k"), let value = Int(lower.dropLast()) { return times(value, 1000) }
        if lower.hasSuffix("m") {
            let number = lower.dropLast()
            if let value = Int(number) { return times(value, 1_000_000) }
            let parts = number.split(separator: ".")
            if parts.count == 2, let whole = Int(parts[0]), parts[1].count <= 6, let fraction = Int(parts[1]) {
                var scale = 1_000_000
                for _ in 0..<parts[1].count { scale /= 10 }
                guard let wholePart = times(whole, 1_000_000) else { return nil }
                let (total, overflow) = wholePart.addingReportingOverflow(fraction * scale)
                return overflow ? nil : total
            }
            return nil
        }
        return Int(text)
    }

    static func formatRate(_ rate: Rational) -> String {
        if rate.denominator == 1 { return "\(rate.numerator)" }
        let milli = rate.numerator * 1000 / rate.denominator
        return "\(milli / 1000).\(String(milli % 1000 + 1000).dropFirst())"
    }

    /// Frames per HLS segment / keyframe interval for a segment duration in seconds.
    public func framesPerSegment(seconds: Int) -> Int {
        Int(Rational(Int64(seconds), 1).rescale(1, to: frameRate.inverted))
    }
}
