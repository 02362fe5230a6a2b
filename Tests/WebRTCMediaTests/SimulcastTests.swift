// Telling simulcast layers apart and choosing one: the picture size a keyframe announces
// (H.264 SPS, VP8 key frame header), and SimulcastLayerSelector's rules.
import Testing
import TestSupport
@testable import WebRTCMedia

/// Real x264 SPSs (baseline): 640x360 is coded as 640x368 and cropped.
private let sps640x360 = hex("67 42 c0 1e d9 00 a0 2f f9 70 11 00 00 03 00 01 00 00 03 00 3c 0f 16 2e 48")
private let sps320x180 = hex("67 42 c0 0d d9 01 41 9f 9f 01 10 00 00 03 00 10 00 00 03 03 c0 f1 42 a4 80")

private func frame(_ codec: MediaCodec, _ data: [UInt8], keyframe: Bool = true) -> EncodedFrame {
    EncodedFrame(codec: codec, timestamp: 0, data: data, isKeyframe: keyframe, isComplete: true, followsLoss: false,
                 firstSequence: 0, lastSequence: 0)
}

/// An access unit: AUD, SPS, PPS and an IDR slice, with 4- and 3-byte start codes.
private func idr(_ sps: [UInt8]) -> [UInt8] {
    [0, 0, 0, 1, 0x09, 0xF0] + [0, 0, 0, 1] + sps + [0, 0, 1, 0x68, 0xCE, 0x38, 0x80] + [0, 0, 0, 1, 0x65, 0x88, 0x84, 0x00, 0x33]
}

struct PictureSizeTests {
    @Test("H.264: the SPS of a keyframe gives the cropped picture size, wherever it stands in the access unit")
    func h264() {
        #expect(frame(.h264, idr(sps640x360)).keyframePictureSize == PictureSize(width: 640, height: 360))
        #expect(frame(.h264, idr(sps320x180)).keyframePictureSize == PictureSize(width: 320, height: 180))
        // The SPS last, running to the end of the data.
        #expect(frame(.h264, [0, 0, 0, 1, 0x09, 0xF0, 0, 0, 1] + sps320x180).keyframePictureSize?.area == 320 * 180)
        // Delta frames, a keyframe without an SPS and a cut SPS say nothing.
        #expect(frame(.h264, idr(sps640x360), keyframe: false).keyframePictureSize == nil)
        #expect(frame(.h264, [0, 0, 0, 1, 0x65, 0x88, 0x84]).keyframePictureSize == nil)
        #expect(frame(.h264, [0, 0, 0, 1] + sps640x360.prefix(6)).keyframePictureSize == nil)
        #expect(frame(.h264, []).keyframePictureSize == nil)
    }

    @Test("VP8: width and height of the key frame header, scaling bits ignored")
    func vp8() {
        // libvpx, 176x144.
        let key = hex("f0 4c 00 9d 01 2a b0 00 90 00")
        #expect(frame(.vp8, key).keyframePictureSize == PictureSize(width: 176, height: 144))
        // Scaling hints in the top two bits of each size.
        #expect(frame(.vp8, hex("f0 4c 00 9d 01 2a 00 c5 d0 82")).keyframePictureSize == PictureSize(width: 1280, height: 720))
        // An inter frame (bit 0 of the tag set), a wrong start code, too short, audio.
        #expect(frame(.vp8, hex("f1 4c 00 9d 01 2a b0 00 90 00")).keyframePictureSize == nil)
        #expect(frame(.vp8, hex("f0 4c 00 9d 01 2b b0 00 90 00")).keyframePictureSize == nil)
        #expect(frame(.vp8, hex("f0 4c 00 9d 01 2a b0 00 90")).keyframePictureSize == nil)
        #expect(frame(.opus, key).keyframePictureSize == nil)
    }
}

/// `admit`, called outside `#expect` (which cannot call a mutating method).
private func admitted(_ selector: inout SimulcastLayerSelector, ssrc: UInt32, isKeyframe: Bool, pictureSize: PictureSize?,
                      now: Int64) -> Bool {
    selector.admit(ssrc: ssrc, isKeyframe: isKeyframe, pictureSize: pictureSize, now: now)
}

struct SimulcastLayerSelectorTests {
    static let small: UInt32 = 10, medium: UInt32 = 20, large: UInt32 = 30
    static let q = PictureSize(width: 320, height: 180), h = PictureSize(width: 640, height: 360),
               f = PictureSize(width: 1280, height: 720)

    /// Packets of every layer in `ssrcs` at `now`.
    private func packets(_ selector: inout SimulcastLayerSelector, _ ssrcs: [UInt32], at now: Int64) {
        for ssrc in ssrcs { selector.packetReceived(ssrc: ssrc, now: now) }
    }

    @Test("the first keyframe is taken, a larger layer's keyframe moves up, smaller ones and delta frames of others are dropped")
    func movesUp() {
        var selector = SimulcastLayerSelector()
        packets(&selector, [Self.small, Self.large], at: 0)
        // Delta frames before any keyframe: nothing to decode yet.
        #expect(!admitted(&selector, ssrc: Self.large, isKeyframe: false, pictureSize: nil, now: 0))
        #expect(admitted(&selector, ssrc: Self.small, isKeyframe: true, pictureSize: Self.q, now: 10))
        #expect(selector.selected == Self.small && selector.switches == 0)
        #expect(admitted(&selector, ssrc: Self.small, isKeyframe: false, pictureSize: nil, now: 20))
        #expect(admitted(&selector, ssrc: Self.large, isKeyframe: true, pictureSize: Self.f, now: 30))
        #expect(selector.selected == Self.large && selector.switches == 1)
        #expect(selector.selectedPictureSize == Self.f)
        // The small layer's frames, keyframes too, are not delivered any more.
        #expect(!admitted(&selector, ssrc: Self.small, isKeyframe: false, pictureSize: nil, now: 40))
        #expect(!admitted(&selector, ssrc: Self.small, isKeyframe: true, pictureSize: Self.q, now: 50))
        // A layer the same size does not take over either.
        packets(&selector, [Self.medium], at: 60)
        #expect(!admitted(&selector, ssrc: Self.medium, isKeyframe: true, pictureSize: Self.f, now: 60))
        #expect(admitted(&selector, ssrc: Self.large, isKeyframe: false, pictureSize: nil, now: 70))
        #expect(selector.layerCount == 3 && selector.switches == 1)
    }

    @Test("keyframe requests: the layer in use and layers of unknown size; the others only as the layer to move to")
    func keyframeRequests() {
        var selector = SimulcastLayerSelector(silenceTimeout: 1_000_000)
        packets(&selector, [Self.small, Self.medium, Self.large], at: 0)
        for ssrc in [Self.small, Self.medium, Self.large] { #expect(selector.wantsKeyframes(from: ssrc, now: 0)) }
        _ = selector.admit(ssrc: Self.small, isKeyframe: true, pictureSize: Self.q, now: 10)
        _ = selector.admit(ssrc: Self.medium, isKeyframe: true, pictureSize: Self.h, now: 10)
        #expect(selector.selected == Self.medium)
        #expect(!selector.wantsKeyframes(from: Self.small, now: 20))
        #expect(selector.wantsKeyframes(from: Self.medium, now: 20))
        #expect(selector.wantsKeyframes(from: Self.large, now: 20), "its size is not known yet")
        // An SSRC never seen is a layer of unknown size.
        #expect(selector.wantsKeyframes(from: 99, now: 20))
        #expect(selector.target(now: 20) == nil)
    }

    @Test("the layer in use falls silent: the largest layer still sending is asked for a keyframe and taken at it")
    func fallsBack() {
        var selector = SimulcastLayerSelector(silenceTimeout: 1_000_000)
        packets(&selector, [Self.small, Self.medium, Self.large], at: 0)
        _ = selector.admit(ssrc: Self.small, isKeyframe: true, pictureSize: Self.q, now: 0)
        _ = selector.admit(ssrc: Self.medium, isKeyframe: true, pictureSize: Self.h, now: 0)
        _ = selector.admit(ssrc: Self.large, isKeyframe: true, pictureSize: Self.f, now: 0)
        #expect(selector.selected == Self.large)
        // The large layer stops at 0.5 s; the others go on.
        var now: Int64 = 0
        while now <= 1_400_000 {
            packets(&selector, now < 500_000 ? [Self.small, Self.medium, Self.large] : [Self.small, Self.medium], at: now)
            now += 100_000
        }
        #expect(selector.target(now: 1_400_000) == nil, "silent for 0.9 s is not yet silent")
        packets(&selector, [Self.small, Self.medium], at: 1_600_000)
        #expect(selector.target(now: 1_600_000) == Self.medium)
        #expect(selector.wantsKeyframes(from: Self.medium, now: 1_600_000))
        #expect(!selector.wantsKeyframes(from: Self.small, now: 1_600_000))
        // Until a keyframe comes, delta frames of the other layers are not delivered.
        #expect(!admitted(&selector, ssrc: Self.medium, isKeyframe: false, pictureSize: nil, now: 1_600_000))
        // Any keyframe ends the freeze, even of a smaller layer than the one asked for ...
        #expect(admitted(&selector, ssrc: Self.small, isKeyframe: true, pictureSize: Self.q, now: 1_650_000))
        #expect(selector.selected == Self.small && selector.switches == 3)
        // ... and the medium layer is still wanted, and taken at its keyframe.
        #expect(selector.target(now: 1_650_000) == Self.medium)
        #expect(selector.wantsKeyframes(from: Self.medium, now: 1_650_000))
        #expect(admitted(&selector, ssrc: Self.medium, isKeyframe: true, pictureSize: Self.h, now: 1_700_000))
        #expect(selector.selected == Self.medium && selector.switches == 4)
        #expect(selector.target(now: 1_700_000) == nil)
        #expect(!selector.wantsKeyframes(from: Self.large, now: 1_700_000), "silent: nothing to ask it")
        // The large layer comes back with a keyframe: up again.
        packets(&selector, [Self.large], at: 3_000_000)
        #expect(admitted(&selector, ssrc: Self.large, isKeyframe: true, pictureSize: Self.f, now: 3_000_000))
        #expect(selector.selected == Self.large && selector.switches == 5)
    }
}
