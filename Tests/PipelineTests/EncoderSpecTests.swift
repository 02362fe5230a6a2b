// EncoderSpec.parse: the CLI/API encoder string against the IVS EncoderConfiguration limits.
import MediaCore
@testable import Pipeline
import Testing

struct EncoderSpecTests {
    @Test("valid specs", arguments: [
        ("1280x720@30:2500000", 1280, 720, Rational(30, 1), 2_500_000),
        ("1920x1080@29.97:6M", 1920, 1080, Rational(30000, 1001), 6_000_000),
        ("1280x720@59.94:4500k", 1280, 720, Rational(60000, 1001), 4_500_000),
        ("1920x1080@23.976:5M", 1920, 1080, Rational(24000, 1001), 5_000_000),
        ("640x360@12.5:800K", 640, 360, Rational(25, 2), 800_000),
        ("640x360@25:1.5M", 640, 360, Rational(25, 1), 1_500_000),
        ("1280X720@60:8500000", 1280, 720, Rational(60, 1), 8_500_000),
        ("2x2@1:1", 2, 2, Rational(1, 1), 1),
        ("1080x1920@30:2M", 1080, 1920, Rational(30, 1), 2_000_000),
        ("1920x1080@60:8.5M", 1920, 1080, Rational(60, 1), 8_500_000),
    ])
    func valid(text: String, width: Int, height: Int, rate: Rational, bitrate: Int) throws {
        let spec = try EncoderSpec.parse(text)
        #expect(spec == EncoderSpec(width: width, height: height, frameRate: rate, bitrate: bitrate))
        // The description parses back to the same spec.
        #expect(try EncoderSpec.parse(spec.description) == spec)
    }

    @Test("the default is IVS's: 1280x720, 30 fps, 2.5 Mbps")
    func defaults() throws {
        #expect(EncoderSpec.default == EncoderSpec(width: 1280, height: 720, frameRate: Rational(30, 1), bitrate: 2_500_000))
        try EncoderSpec.default.validate()
    }

    @Test("out-of-range values name their field", arguments: [
        ("1281x720@30:1M", "width"), ("0x720@30:1M", "width"), ("1922x720@30:1M", "width"), ("-2x720@30:1M", "width"),
        ("1280x721@30:1M", "height"), ("1280x1922@30:1M", "height"), ("1280x0@30:1M", "height"),
        ("1920x1088@30:1M", "width*height"), ("1920x1920@30:1M", "width*height"),
        ("1280x720@61:1M", "framerate"), ("1280x720@60.5:1M", "framerate"), ("1280x720@0.5:1M", "framerate"),
        ("1280x720@30:0", "bitrate"), ("1280x720@30:8500001", "bitrate"), ("1280x720@30:9M", "bitrate"),
        ("1280x720@30:-5", "bitrate"), ("1280x720@30:8.6M", "bitrate"),
    ])
    func invalidField(text: String, field: String) {
        #expect {
            try EncoderSpec.parse(text)
        } throws: { error in
            guard case EncoderSpec.ParseError.invalid(let reported, _) = error else { return false }
            return reported == field
        }
    }

    @Test("malformed strings", arguments: [
        "", "1280x720", "1280x720@30", "@30:1M", "x720@30:1M", "1280x@30:1M", "1280x720@:1M", "1280x720@30:",
        "1280x720@30:1M:2", "1280x720@@30:1M", "1280*720@30:1M", "banana", "1280x720@30:1.5k", "1280x720@30:1X",
        "1280x720@30.0001:1M", "1280x720@thirty:1M", "1280x720@30.:1M",
        "1280x720@30:99999999999999999M", "1280x720@30:9999999999999999k", "1280x720@922337203685477580.5:1M",
    ])
    func malformed(text: String) {
        #expect(throws: EncoderSpec.ParseError.self) { try EncoderSpec.parse(text) }
    }

    @Test("frame rate 0 and negative rates are rejected")
    func zeroRate() {
        #expect(throws: EncoderSpec.ParseError.self) { try EncoderSpec.parse("1280x720@0:1M") }
        #expect(throws: EncoderSpec.ParseError.self) { try EncoderSpec.parse("1280x720@-30:1M") }
        #expect(throws: EncoderSpec.ParseError.self) { try EncoderSpec.parse("1280x720@0.000:1M") }
    }

    @Test("NTSC rates", arguments: [("29.97", Rational(30000, 1001)), ("59.94", Rational(60000, 1001)),
                                    ("23.976", Rational(24000, 1001)), ("23.98", Rational(24000, 1001)),
                                    ("47.952", Rational(48000, 1001)), ("30", Rational(30, 1)), ("29.5", Rational(59, 2))])
    func ntsc(text: String, rate: Rational) {
        #expect(EncoderSpec.parseRate(text) == rate)
    }

    @Test("frames per segment / keyframe interval")
    func framesPerSegment() throws {
        #expect(try EncoderSpec.parse("1280x720@30:1M").framesPerSegment(seconds: 2) == 60)
        #expect(try EncoderSpec.parse("1280x720@25:1M").framesPerSegment(seconds: 6) == 150)
        #expect(try EncoderSpec.parse("1280x720@29.97:1M").framesPerSegment(seconds: 2) == 60)
        #expect(try EncoderSpec.parse("1280x720@59.94:1M").framesPerSegment(seconds: 10) == 599)
    }

    @Test("x264 threads follow the canvas: one up to 640x360, two above")
    func encoderThreads() throws {
        #expect(try EncoderSpec.parse("640x360@30:1M").defaultEncoderThreads == 1)
        #expect(try EncoderSpec.parse("360x640@30:1M").defaultEncoderThreads == 1)
        #expect(try EncoderSpec.parse("642x360@30:1M").defaultEncoderThreads == 2)
        #expect(try EncoderSpec.parse("1280x720@30:1M").defaultEncoderThreads == 2)
        #expect(try EncoderSpec.parse("1920x1080@60:8M").defaultEncoderThreads == 2)
    }

    @Test("errors read well")
    func messages() {
        #expect(EncoderSpec.ParseError.invalid(field: "width", message: "1281 must be even").description == "width: 1281 must be even")
        #expect(EncoderSpec.ParseError.malformed("x").description.contains("WIDTHxHEIGHT@FPS:BITRATE"))
    }
}
