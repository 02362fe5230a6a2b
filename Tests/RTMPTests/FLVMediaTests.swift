// FLV tag bodies: legacy and Enhanced RTMP, the codecs we refuse, truncation, and the
// SPS / AudioSpecificConfig readers against records FFmpeg 5.1 (libx264, aac) produced.
import MediaCore
@testable import RTMP
import TestSupport
import Testing

/// AVCDecoderConfigurationRecords from `ffmpeg -f lavfi -i testsrc2=size=WxH ... -c:v libx264 -f flv`,
/// with what ffprobe reports for each file.
struct RealAVCRecord: Sendable, CustomStringConvertible {
    var name: String
    var record: String
    var width: Int, height: Int, profile: UInt8, chroma: Int, bitDepth: Int, progressive: Bool
    var description: String { name }

    static let all: [RealAVCRecord] = [
        RealAVCRecord(name: "1280x720 constrained baseline", record: "0142c01fffe100196742c01fd9005005bb0110000003001000000303c0f183248001000568cb83cb20",
                      width: 1280, height: 720, profile: 66, chroma: 1, bitDepth: 8, progressive: true),
        RealAVCRecord(name: "1920x1080 high, cropped from 1088", record: "01640028ffe1001b67640028acd940780227e5c044000003000400000300f03c60c65801000668ebe3cb22c0fdf8f800",
                      width: 1920, height: 1080, profile: 100, chroma: 1, bitDepth: 8, progressive: true),
        RealAVCRecord(name: "640x360 high 4:4:4 predictive", record: "01f4001effe1001b67f4001e919b281405ff138088000003000800000301e078b16cb001000668ebe3c44844fff8f800",
                      width: 640, height: 360, profile: 244, chroma: 3, bitDepth: 8, progressive: true),
        RealAVCRecord(name: "854x480 high 10", record: "016e001fffe1001b676e001fa6cd940d83de6f0110000003001000000303c0f183196001000668ebe3cb22c0fdfafa00",
                      width: 854, height: 480, profile: 110, chroma: 1, bitDepth: 10, progressive: true),
        RealAVCRecord(name: "720x576 interlaced high", record: "0164001effe100186764001eacd940b424d8088000000300800000190f8a14cb01000668fba3cb22c0fdf8f800",
                      width: 720, height: 576, profile: 100, chroma: 1, bitDepth: 8, progressive: false),
        RealAVCRecord(name: "200x100 high 4:2:2", record: "017a000bffe1001a677a000bbcd9434fe58dc044000003000400000300f03c50a65801000668ebe3cb22c0fef8f800",
                      width: 200, height: 100, profile: 122, chroma: 2, bitDepth: 8, progressive: true),
        RealAVCRecord(name: "64x64 constrained baseline", record: "0142c00affe100176742c00ad90426c044000003000400000300f03c48992001000568cb83cb20",
                      width: 64, height: 64, profile: 66, chroma: 1, bitDepth: 8, progressive: true),
    ]
}

struct FLVVideoTests {
    @Test("legacy AVC: sequence header, keyframe, interframe, end of sequence")
    func legacyAVC() throws {
        let record = hex(RealAVCRecord.all[6].record)
        #expect(try FLVMediaPacket.parseVideo([0x17, 0, 0, 0, 0] + record) == .videoConfig(codec: .avc, record: record))
        #expect(try FLVMediaPacket.parseVideo([0x17, 1, 0, 0, 0x42, 0, 0, 0, 1, 0x65])
            == .videoFrame(codec: .avc, isKeyframe: true, compositionTimeMs: 66, data: [0, 0, 0, 1, 0x65]))
        #expect(try FLVMediaPacket.parseVideo([0x27, 1, 0, 0, 0, 0, 0, 0, 1, 0x41])
            == .videoFrame(codec: .avc, isKeyframe: false, compositionTimeMs: 0, data: [0, 0, 0, 1, 0x41]))
        #expect(try FLVMediaPacket.parseVideo([0x17, 2, 0, 0, 0]) == .videoEndOfSequence(codec: .avc))
        #expect(try FLVMediaPacket.parseVideo([0x17, 3, 0, 0, 0]) == .unsupported("AVC packet type 3"))
    }

    static let compositionTimes: [([UInt8], Int32)] = [
        ([0xFF, 0xFF, 0xDE], -34), ([0x80, 0x00, 0x00], -8_388_608), ([0x7F, 0xFF, 0xFF], 8_388_607), ([0xFF, 0xFF, 0xFF], -1),
    ]

    @Test("composition time is a signed 24-bit value", arguments: compositionTimes)
    func negativeCompositionTime(bytes: [UInt8], expected: Int32) throws {
        #expect(try FLVMediaPacket.parseVideo([0x27, 1] + bytes + [9])
            == .videoFrame(codec: .avc, isKeyframe: false, compositionTimeMs: expected, data: [9]))
    }

    @Test("legacy codecs other than AVC, and command frames")
    func legacyOthers() throws {
        #expect(try FLVMediaPacket.parseVideo([0x12, 0, 0]) == .unsupported("legacy video codec ID 2 (Sorenson H.263)"))
        #expect(try FLVMediaPacket.parseVideo([0x14]) == .unsupported("legacy video codec ID 4 (On2 VP6)"))
        #expect(try FLVMediaPacket.parseVideo([0x1C, 0, 0, 0, 0]) == .unsupported("legacy video codec ID 12 (HEVC (non-standard codec ID 12))"))
        #expect(try FLVMediaPacket.parseVideo([0x1F]) == .unsupported("legacy video codec ID 15 (unknown)"))
        #expect(try FLVMediaPacket.parseVideo([0x57, 0x01]) == .ignored("video command frame"))
        #expect(try FLVMediaPacket.parseVideo([]) == .ignored("empty video message"))
    }

    @Test("enhanced hvc1: sequence start, coded frames with composition time, coded frames X, end")
    func enhancedHEVC() throws {
        let hvc1 = Array("hvc1".utf8)
        let record: [UInt8] = [0x01, 0x01, 0x60, 0x00, 0x00, 0x00]
        #expect(try FLVMediaPacket.parseVideo([0x90] + hvc1 + record) == .videoConfig(codec: .hevc, record: record))
        #expect(try FLVMediaPacket.parseVideo([0x91] + hvc1 + [0xFF, 0xFF, 0xF0, 0, 0, 0, 2, 0x26, 0x01])
            == .videoFrame(codec: .hevc, isKeyframe: true, compositionTimeMs: -16, data: [0, 0, 0, 2, 0x26, 0x01]))
        #expect(try FLVMediaPacket.parseVideo([0xA3] + hvc1 + [0, 0, 0, 2, 0x02, 0x01])
            == .videoFrame(codec: .hevc, isKeyframe: false, compositionTimeMs: 0, data: [0, 0, 0, 2, 0x02, 0x01]))
        #expect(try FLVMediaPacket.parseVideo([0x92] + hvc1) == .videoEndOfSequence(codec: .hevc))
    }

    @Test("enhanced av01 and vp09 carry no composition time, even in coded frames")
    func enhancedAV1() throws {
        let av01 = Array("av01".utf8)
        #expect(try FLVMediaPacket.parseVideo([0x90] + av01 + [0x81, 0x08, 0x0C, 0x00]) == .videoConfig(codec: .av1, record: [0x81, 0x08, 0x0C, 0x00]))
        #expect(try FLVMediaPacket.parseVideo([0x91] + av01 + [0x12, 0x00, 0x0A])
            == .videoFrame(codec: .av1, isKeyframe: true, compositionTimeMs: 0, data: [0x12, 0x00, 0x0A]))
        #expect(try FLVMediaPacket.parseVideo([0xA3] + av01 + [0x32]) == .videoFrame(codec: .av1, isKeyframe: false, compositionTimeMs: 0, data: [0x32]))
        #expect(try FLVMediaPacket.parseVideo([0x91] + Array("vp09".utf8) + [7]) == .videoFrame(codec: .vp9, isKeyframe: true, compositionTimeMs: 0, data: [7]))
        #expect(try FLVMediaPacket.parseVideo([0x91] + Array("avc1".utf8) + [0, 0, 5, 9]) == .videoFrame(codec: .avc, isKeyframe: true, compositionTimeMs: 5, data: [9]))
    }

    @Test("E-RTMP v2 multitrack video: one track, many tracks with sizes, many codecs; truncations throw; nesting and floods are refused")
    func multitrackVideo() throws {
        let avc1 = Array("avc1".utf8), hvc1 = Array("hvc1".utf8)
        // OneTrack: the rest of the message is the track's body.
        #expect(try FLVMediaPacket.parseVideo([0x96, 0x00] + avc1 + [2, 0xAA, 0xBB])
                == .multitrackVideo([FLVTrackPacket(track: 2, packet: .videoConfig(codec: .avc, record: [0xAA, 0xBB]))]))
        // ManyTracks, coded frames (composition time first), a keyframe for every track.
        #expect(try FLVMediaPacket.parseVideo([0x96, 0x11] + avc1 + [0, 0, 0, 4, 0, 0, 1, 9] + [1, 0, 0, 5, 0, 0, 0, 7, 8])
                == .multitrackVideo([
                    FLVTrackPacket(track: 0, packet: .videoFrame(codec: .avc, isKeyframe: true, compositionTimeMs: 1, data: [9])),
                    FLVTrackPacket(track: 1, packet: .videoFrame(codec: .avc, isKeyframe: true, compositionTimeMs: 0, data: [7, 8]))]))
        // ManyTracksManyCodecs: each track names its codec; CodedFramesX has no composition time.
        #expect(try FLVMediaPacket.parseVideo([0xA6, 0x23] + avc1 + [0, 0, 0, 1, 5] + hvc1 + [1, 0, 0, 1, 6])
                == .multitrackVideo([
                    FLVTrackPacket(track: 0, packet: .videoFrame(codec: .avc, isKeyframe: false, compositionTimeMs: 0, data: [5])),
                    FLVTrackPacket(track: 1, packet: .videoFrame(codec: .hevc, isKeyframe: false, compositionTimeMs: 0, data: [6]))]))
        #expect(throws: FLVMediaError.truncated("track 1 body")) {
            try FLVMediaPacket.parseVideo([0x96, 0x11] + avc1 + [1, 0, 0, 9, 1])
        }
        #expect(throws: FLVMediaError.truncated("track ID")) { try FLVMediaPacket.parseVideo([0x96, 0x00] + avc1) }
        #expect(throws: FLVMediaError.truncated("multitrack FourCC")) { try FLVMediaPacket.parseVideo([0x96, 0x00, 0x61]) }
        #expect(try FLVMediaPacket.parseVideo([0x96, 0x06] + avc1) == .unsupported("video packet type 6 inside a multitrack message"))
        #expect(try FLVMediaPacket.parseVideo([0x96, 0x30] + avc1) == .unsupported("multitrack type 3"))
        #expect(try FLVMediaPacket.parseVideo([0x96, 0x00] + Array("vvc1".utf8) + [0]) == .multitrackVideo([
            FLVTrackPacket(track: 0, packet: .unsupported("video FourCC 'vvc1'"))]))
        let flood = (0..<17).flatMap { track -> [UInt8] in [UInt8(track), 0, 0, 1, 0] }
        #expect(try FLVMediaPacket.parseVideo([0x96, 0x10] + avc1 + flood) == .unsupported("more than 16 tracks in one video message"))
    }

    @Test("enhanced packets without media, and what we cannot decode")
    func enhancedOthers() throws {
        let hvc1 = Array("hvc1".utf8)
        #expect(try FLVMediaPacket.parseVideo([0x94] + hvc1 + [0x02, 0x00, 0x09]) == .ignored("video metadata"))
        #expect(try FLVMediaPacket.parseVideo([0xD0, 0x01]) == .ignored("video command frame"))
        #expect(try FLVMediaPacket.parseVideo([0x95] + Array("av01".utf8)) == .unsupported("MPEG-2 TS sequence start (av1)"))
        #expect(try FLVMediaPacket.parseVideo([0x97, 0x02]) == .unsupported("E-RTMP v2 ModEx video packet"))
        #expect(try FLVMediaPacket.parseVideo([0x91] + Array("vvc1".utf8)) == .unsupported("video FourCC 'vvc1'"))
        #expect(try FLVMediaPacket.parseVideo([0x91, 0, 1, 2, 0xFF]) == .unsupported("video FourCC 0x000102ff"))
        #expect(try FLVMediaPacket.parseVideo([0x98] + hvc1) == .unsupported("video packet type 8"))
    }

    @Test("truncated headers throw; every prefix of a valid tag either parses or throws")
    func truncation() {
        #expect(throws: FLVMediaError.truncated("AVC video header")) { try FLVMediaPacket.parseVideo([0x17]) }
        #expect(throws: FLVMediaError.truncated("AVC video header")) { try FLVMediaPacket.parseVideo([0x17, 0x01, 0x00, 0x00]) }
        #expect(throws: FLVMediaError.truncated("video FourCC")) { try FLVMediaPacket.parseVideo([0x91, 0x68, 0x76]) }
        #expect(throws: FLVMediaError.truncated("composition time")) { try FLVMediaPacket.parseVideo([0x91] + Array("hvc1".utf8) + [0, 0]) }
        let tags: [[UInt8]] = [[0x17, 1, 0xFF, 0xFF, 0xDE, 0, 0, 0, 1, 0x65], [0x91] + Array("hvc1".utf8) + [0, 0, 1, 7, 7]]
        var thrown = 0
        for tag in tags {
            for length in 0...tag.count {
                do { _ = try FLVMediaPacket.parseVideo(Array(tag.prefix(length))) } catch { thrown += 1 }
            }
        }
        #expect(thrown == 4 + 7)
    }
}

struct FLVAudioTests {
    @Test("legacy AAC: AudioSpecificConfig and raw frames")
    func legacyAAC() throws {
        #expect(try FLVMediaPacket.parseAudio([0xAF, 0x00, 0x12, 0x10]) == .audioConfig(codec: .aac, config: [0x12, 0x10]))
        #expect(try FLVMediaPacket.parseAudio([0xAF, 0x01, 0x21, 0x1B]) == .audioFrame(codec: .aac, data: [0x21, 0x1B], sampleRate: nil, channels: nil))
        #expect(try FLVMediaPacket.parseAudio([0xAF, 0x02]) == .unsupported("AAC packet type 2"))
        #expect(throws: FLVMediaError.truncated("AAC packet type")) { try FLVMediaPacket.parseAudio([0xAF]) }
    }

    @Test("legacy MP3 takes rate and channels from the tag flags")
    func legacyMP3() throws {
        #expect(try FLVMediaPacket.parseAudio([0x2F, 0xFF, 0xFB]) == .audioFrame(codec: .mp3, data: [0xFF, 0xFB], sampleRate: 44100, channels: 2))
        #expect(try FLVMediaPacket.parseAudio([0x22, 0xFF, 0xF3]) == .audioFrame(codec: .mp3, data: [0xFF, 0xF3], sampleRate: 5512, channels: 1))
        #expect(try FLVMediaPacket.parseAudio([0x2B, 0xFF]) == .audioFrame(codec: .mp3, data: [0xFF], sampleRate: 22050, channels: 2))
        #expect(throws: FLVMediaError.truncated("MP3 frame")) { try FLVMediaPacket.parseAudio([0x2F]) }
    }

    @Test("other legacy sound formats are unsupported; an empty message is silence")
    func legacyOthers() throws {
        #expect(try FLVMediaPacket.parseAudio([0x3E, 0x00]) == .unsupported("audio format 3 (linear PCM (little endian))"))
        #expect(try FLVMediaPacket.parseAudio([0x72, 0x00]) == .unsupported("audio format 7 (G.711 A-law)"))
        #expect(try FLVMediaPacket.parseAudio([0xB2, 0x00]) == .unsupported("audio format 11 (Speex)"))
        #expect(try FLVMediaPacket.parseAudio([0xE2, 0x00]) == .unsupported("audio format 14 (MP3 8 kHz)"))
        #expect(try FLVMediaPacket.parseAudio([0xC2, 0x00]) == .unsupported("audio format 12 (unknown)"))
        #expect(try FLVMediaPacket.parseAudio([]) == .ignored("audio silence"))
    }

    @Test("enhanced audio: mp4a and .mp3 FourCCs; Opus, multitrack and ModEx unsupported")
    func enhancedAudio() throws {
        let mp4a = Array("mp4a".utf8)
        #expect(try FLVMediaPacket.parseAudio([0x90] + mp4a + [0x11, 0x88]) == .audioConfig(codec: .aac, config: [0x11, 0x88]))
        #expect(try FLVMediaPacket.parseAudio([0x91] + mp4a + [0x21]) == .audioFrame(codec: .aac, data: [0x21], sampleRate: nil, channels: nil))
        #expect(try FLVMediaPacket.parseAudio([0x91] + Array(".mp3".utf8) + [0xFF]) == .audioFrame(codec: .mp3, data: [0xFF], sampleRate: nil, channels: nil))
        #expect(try FLVMediaPacket.parseAudio([0x92] + mp4a) == .ignored("audio sequence end"))
        #expect(try FLVMediaPacket.parseAudio([0x91] + Array("Opus".utf8) + [0xFC]) == .unsupported("audio FourCC 'Opus'"))
        #expect(try FLVMediaPacket.parseAudio([0x95, 0x00] + mp4a) == .unsupported("E-RTMP v2 multitrack audio"))
        #expect(try FLVMediaPacket.parseAudio([0x97, 0x02]) == .unsupported("E-RTMP v2 ModEx audio packet"))
        #expect(throws: FLVMediaError.truncated("audio FourCC")) { try FLVMediaPacket.parseAudio([0x91, 0x6D]) }
    }
}

struct CodecConfigurationTests {
    @Test("SPS of real libx264 streams: size after cropping, profile, chroma, bit depth, interlacing", arguments: RealAVCRecord.all)
    func realSPS(vector: RealAVCRecord) throws {
        let record = try AVCDecoderConfigurationRecord(parsing: hex(vector.record))
        #expect(record.nalUnitLengthSize == 4)
        #expect(record.sequenceParameterSets.count == 1)
        #expect(record.pictureParameterSets.count == 1)
        #expect(record.profileIndication == vector.profile)
        let sps = try record.firstSequenceParameterSet()
        #expect(sps.width == vector.width)
        #expect(sps.height == vector.height)
        #expect(sps.profileIDC == vector.profile)
        #expect(sps.chromaFormatIDC == vector.chroma)
        #expect(sps.bitDepthLuma == vector.bitDepth)
        #expect(sps.bitDepthChroma == vector.bitDepth)
        #expect(sps.frameMBsOnly == vector.progressive)
    }

    @Test("an SPS with scaling lists, picture order count type 1 and emulation prevention bytes")
    func syntheticSPS() throws {
        var bits = BitWriter()
        bits.write(100, bits: 8); bits.write(0, bits: 8); bits.write(40, bits: 8)  // high profile, level 4.0
        bits.writeUnsigned(0)  // seq_parameter_set_id
        bits.writeUnsigned(1); bits.writeUnsigned(0); bits.writeUnsigned(0)  // 4:2:0, 8-bit
        bits.write(0, bits: 1)  // qpprime_y_zero_transform_bypass_flag
        bits.write(1, bits: 1)  // seq_scaling_matrix_present_flag
        for index in 0..<8 {
            switch index {
            case 0:  // an explicit 4x4 list: sixteen deltas
                bits.write(1, bits: 1)
                for delta in [8, 1, -2, 3, 0, 0, 5, -5, 1, 1, 1, 1, 2, 2, 2, 2] { bits.writeSigned(delta) }
            case 6:  // an 8x8 list that switches to the default matrix at once (next scale 0)
                bits.write(1, bits: 1)
                bits.writeSigned(-8)
            case 7:  // an explicit 8x8 list whose eleventh delta reaches 0: the rest repeat, unsent
                bits.write(1, bits: 1)
                for position in 0...10 { bits.writeSigned(position == 10 ? -(8 + 10) : 1) }
            default:
                bits.write(0, bits: 1)
            }
        }
        bits.writeUnsigned(0)  // log2_max_frame_num_minus4
        bits.writeUnsigned(1)  // pic_order_cnt_type
        bits.write(0, bits: 1)  // delta_pic_order_always_zero_flag
        bits.writeSigned(-(1 << 29))  // offset_for_non_ref_pic: a 61-bit code with 30 leading zeros
        bits.writeSigned(0)
        bits.writeUnsigned(2)  // num_ref_frames_in_pic_order_cnt_cycle
        bits.writeSigned(1); bits.writeSigned(-1)
        bits.writeUnsigned(4)  // max_num_ref_frames
        bits.write(0, bits: 1)
        bits.writeUnsigned(119); bits.writeUnsigned(67)  // 120 x 68 macroblocks: 1920 x 1088
        bits.write(1, bits: 1); bits.write(1, bits: 1)  // frame_mbs_only, direct_8x8_inference
        bits.write(1, bits: 1)  // frame_cropping_flag
        bits.writeUnsigned(0); bits.writeUnsigned(0); bits.writeUnsigned(0); bits.writeUnsigned(4)
        bits.write(0, bits: 1)  // vui_parameters_present_flag
        bits.write(1, bits: 1)  // rbsp_stop_one_bit
        let nal = [0x67] + BitWriter.addingEmulationPrevention(bits.bytes)
        #expect(nal.count > bits.bytes.count + 1, "the test SPS must contain an emulation prevention byte")
        let sps = try AVCSequenceParameterSet(nalUnit: nal)
        #expect(sps.width == 1920)
        #expect(sps.height == 1080)
        #expect(sps.profileIDC == 100 && sps.levelIDC == 40)
    }

    @Test("emulation prevention removal keeps everything but the 0x03 after two zeros")
    func emulationPrevention() {
        #expect(AVCSequenceParameterSet.removingEmulationPrevention(hex("00 00 03 00 00 03 01 03 00 03")) == hex("00 00 00 00 01 03 00 03"))
        #expect(AVCSequenceParameterSet.removingEmulationPrevention(hex("00 00 00 03")) == hex("00 00 00"))
    }

    @Test("malformed records and SPS throw instead of trapping")
    func malformed() {
        #expect(throws: FLVMediaError.malformedRecord("AVCDecoderConfigurationRecord version 2")) {
            try AVCDecoderConfigurationRecord(parsing: hex("02 64 00 28 ff e0 00"))
        }
        #expect(throws: FLVMediaError.truncated("SPS")) { try AVCDecoderConfigurationRecord(parsing: hex("01 64 00 28 ff e1 00 19 67")) }
        #expect(throws: FLVMediaError.malformedRecord("no SPS in the record")) {
            try AVCDecoderConfigurationRecord(parsing: hex("01 64 00 28 ff e0 00")).firstSequenceParameterSet()
        }
        #expect(throws: BitstreamError.malformed("NAL unit type 8 is not an SPS")) { try AVCSequenceParameterSet(nalUnit: [0x68, 0xEE]) }
        #expect(throws: BitstreamError.truncated("SPS bits")) { try AVCSequenceParameterSet(nalUnit: [0x67, 0x64]) }
        #expect(throws: BitstreamError.malformed("exp-Golomb code too long")) { try AVCSequenceParameterSet(nalUnit: [0x67, 66, 0, 30, 0, 0, 0, 0, 0, 0]) }
        // Every prefix of a real record either parses or throws.
        let record = hex(RealAVCRecord.all[1].record)
        for length in 0..<record.count {
            _ = try? AVCDecoderConfigurationRecord(parsing: Array(record.prefix(length))).firstSequenceParameterSet()
        }
    }

    @Test("AudioSpecificConfig of real aac encoder output", arguments: [
        ("1210", 44100, 2), ("1188", 48000, 1), ("12b0", 32000, 6),
    ])
    func realAudioSpecificConfig(config: String, sampleRate: Int, channels: Int) throws {
        let parsed = try AACAudioSpecificConfig(parsing: hex(config + "56e500"))
        #expect(parsed == AACAudioSpecificConfig(objectType: 2, sampleRate: sampleRate, channels: channels, hasSpectralBandReplication: false))
    }

    @Test("AudioSpecificConfig: HE-AAC, explicit frequency, escaped object type, 7.1, errors")
    func otherAudioSpecificConfigs() throws {
        // AOT 5 (SBR), 24 kHz core, stereo, 48 kHz extension, then AOT 2: 00101 0110 0010 0011 00010 (000)
        let heAAC = try AACAudioSpecificConfig(parsing: hex("2b 11 88"))
        #expect(heAAC == AACAudioSpecificConfig(objectType: 2, sampleRate: 48000, channels: 2, hasSpectralBandReplication: true))
        // AOT 2, index 15 with 24-bit 22 000 Hz, mono: 00010 1111 000000000101010111110000 0001
        let explicit = try AACAudioSpecificConfig(parsing: hex("17 80 2a f8 08"))
        #expect(explicit.sampleRate == 22000 && explicit.channels == 1)
        // AOT 31 + 6-bit escape 10 → 42 (USAC), 48 kHz, channel config 7 (7.1): 11111 001010 0011 0111
        let escaped = try AACAudioSpecificConfig(parsing: hex("f9 46 e0"))
        #expect(escaped.objectType == 42 && escaped.channels == 8)
        #expect(try AACAudioSpecificConfig(parsing: hex("12 00")).channels == nil)  // channel config 0: PCE
        #expect(throws: FLVMediaError.truncated("AudioSpecificConfig")) { try AACAudioSpecificConfig(parsing: [0x12]) }
        #expect(throws: FLVMediaError.malformedRecord("AAC sampling frequency index 13")) { try AACAudioSpecificConfig(parsing: hex("16 90")) }
    }
}

/// Writes H.264 syntax elements for the synthetic SPS.
struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private var bitCount = 0

    mutating func write(_ value: Int, bits count: Int) {
        for shift in stride(from: count - 1, through: 0, by: -1) {
            if bitCount % 8 == 0 { bytes.append(0) }
            if (value >> shift) & 1 == 1 { bytes[bytes.count - 1] |= 0x80 >> UInt8(bitCount % 8) }
            bitCount += 1
        }
    }

    mutating func writeUnsigned(_ value: Int) {
        let code = value + 1
        let length = Int.bitWidth - code.leadingZeroBitCount
        write(0, bits: length - 1)
        write(code, bits: length)
    }

    mutating func writeSigned(_ value: Int) {
        writeUnsigned(value > 0 ? 2 * value - 1 : -2 * value)
    }

    static func addingEmulationPrevention(_ rbsp: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        var zeros = 0
        for byte in rbsp {
            if zeros >= 2, byte <= 3 {
                output.append(3)
                zeros = 0
            }
            output.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return output
    }
}
