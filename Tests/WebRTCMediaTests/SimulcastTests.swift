// Telling simulcast layers apart and choosing one: the picture size a keyframe announces
// (H.264 SPS, VP8 key frame header), and SimulcastLayerSelector's rules.
import Testing
import TestSupport
@testable import WebRTCMedia

/// Real x264 SPSs (baseline): 640x360 is coded as 640x368 and cropped.
private let sps640x360 = hex("67 42 c0 1e d9 00 a0 2f f9 70 11 00 00 03 00 01 00 00 03 00 3c 0f 16 2e 48")
private let sps320x180 = hex("67 42 c0 0d d9 01 41 9f 9f 01 10 00 00 03 00 10 00 00 03 03 c0 f1 42 a4 80")

private func frame(_ codec: WebRTCCodec, _ data: [UInt8], keyframe: Bool = true) -> EncodedFrame {
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

struct SimulcastLayerFitTests {
    static let small: UInt32 = 10, medium: UInt32 = 20, large: UInt32 = 30
    static let q = PictureSize(width: 320, height: 180), h = PictureSize(width: 640, height: 360),
               f = PictureSize(width: 1280, height: 720)

    @Test("a wanted size: the smallest layer that covers it is composed, moved to at its keyframe, and the largest when none does")
    func fitsTheWantedSize() {
        var selector = SimulcastLayerSelector()
        for ssrc in [Self.small, Self.medium, Self.large] { selector.packetReceived(ssrc: ssrc, now: 0) }
        #expect(admitted(&selector, ssrc: Self.large, isKeyframe: true, pictureSize: Self.f, now: 0))
        #expect(!admitted(&selector, ssrc: Self.medium, isKeyframe: true, pictureSize: Self.h, now: 0))
        _ = selector.admit(ssrc: Self.small, isKeyframe: true, pictureSize: Self.q, now: 0)
        // A 480x270 tile: the 640x360 layer covers it.
        selector.wanted = PictureSize(width: 480, height: 270)
        #expect(selector.target(now: 10) == Self.medium)
        #expect(selector.wantsKeyframes(from: Self.medium, now: 10) && !selector.wantsKeyframes(from: Self.small, now: 10))
        #expect(!admitted(&selector, ssrc: Self.small, isKeyframe: true, pictureSize: Self.q, now: 20), "too small")
        #expect(admitted(&selector, ssrc: Self.large, isKeyframe: false, pictureSize: nil, now: 20), "in use until the switch")
        #expect(admitted(&selector, ssrc: Self.medium, isKeyframe: true, pictureSize: Self.h, now: 30))
        #expect(selector.selected == Self.medium && selector.target(now: 30) == nil)
        #expect(!admitted(&selector, ssrc: Self.large, isKeyframe: true, pictureSize: Self.f, now: 40), "larger than needed")
        // Exactly the layer's size still fits; one pixel more needs the next.
        selector.wanted = PictureSize(width: 640, height: 360)
        #expect(selector.target(now: 50) == nil)
        selector.wanted = PictureSize(width: 640, height: 361)
        #expect(selector.target(now: 50) == Self.large)
        // Larger than every layer: the largest.
        selector.wanted = PictureSize(width: 1920, height: 1080)
        #expect(admitted(&selector, ssrc: Self.large, isKeyframe: true, pictureSize: Self.f, now: 60))
        // No wanted size: the largest, as before.
        selector.wanted = PictureSize(width: 100, height: 50)
        #expect(selector.target(now: 70) == Self.small)
        selector.wanted = nil
        #expect(selector.target(now: 70) == nil && selector.selected == Self.large)
    }

    /// One step of a simulcast publisher's life as the selector sees it.
    enum Step: CustomStringConvertible {
        /// Time passes by `advance` µs, then each layer in `sending` sends a packet.
        case packets(sending: [UInt32], advance: Int64)
        case keyframe(UInt32)
        case delta(UInt32)
        case want(PictureSize?)

        var description: String {
            switch self {
            case .packets(let sending, let advance): "packets(\(sending), +\(advance))"
            case .keyframe(let ssrc): "keyframe(\(ssrc))"
            case .delta(let ssrc): "delta(\(ssrc))"
            case .want(let size): "want(\(size.map(\.description) ?? "largest"))"
            }
        }
    }

    static let sizes: [UInt32: PictureSize] = [small: q, medium: h, large: f]
    static let wants: [PictureSize?] = [nil, PictureSize(width: 300, height: 170), PictureSize(width: 480, height: 270),
                                        PictureSize(width: 640, height: 360), PictureSize(width: 960, height: 540),
                                        PictureSize(width: 1920, height: 1080)]

    static func generate(_ random: inout SeededGenerator) -> [Step] {
        let ssrcs = [small, medium, large]
        return (0..<Int.random(in: 5...80, using: &random)).map { _ in
            switch Int.random(in: 0..<10, using: &random) {
            case 0...3:
                return .packets(sending: ssrcs.filter { _ in Int.random(in: 0..<5, using: &random) > 0 },
                                advance: [0, 30_000, 400_000, 1_500_000].randomElement(using: &random)!)
            case 4...5: return .keyframe(ssrcs.randomElement(using: &random)!)
            case 6...7: return .delta(ssrcs.randomElement(using: &random)!)
            default: return .want(wants.randomElement(using: &random)!)
            }
        }
    }

    /// The model's ranking, stated as a sort key rather than a comparison: layers covering the
    /// wanted size first, smallest first; then the others, largest first.
    static func key(_ size: PictureSize, wanted: PictureSize?) -> (Int, Int) {
        guard let wanted, size.width >= wanted.width, size.height >= wanted.height else { return (1, -size.area) }
        return (0, size.area)
    }

    /// Runs `steps`; nil if every rule held, else what broke.
    static func check(_ steps: [Step]) -> String? {
        var selector = SimulcastLayerSelector(silenceTimeout: 1_000_000)
        var now: Int64 = 0
        var lastPacket: [UInt32: Int64] = [:]
        var known: Set<UInt32> = []
        var wanted: PictureSize?
        func silent(_ ssrc: UInt32) -> Bool { lastPacket[ssrc].map { now - $0 > 1_000_000 } ?? true }
        func best() -> (Int, Int)? {
            known.filter { !silent($0) }.map { key(sizes[$0]!, wanted: wanted) }.min { $0 < $1 }
        }
        for (index, step) in steps.enumerated() {
            let before = selector.selected
            switch step {
            case .packets(let sending, let advance):
                now += advance
                for ssrc in sending {
                    selector.packetReceived(ssrc: ssrc, now: now)
                    lastPacket[ssrc] = now
                }
            case .want(let size):
                wanted = size
                selector.wanted = size
            case .delta(let ssrc):
                lastPacket[ssrc] = lastPacket[ssrc] ?? now   // the selector learns of a layer from its frames too
                if selector.admit(ssrc: ssrc, isKeyframe: false, pictureSize: nil, now: now) != (ssrc == before) {
                    return "step \(index): a delta frame of \(ssrc) delivered while \(before.map(String.init) ?? "none") is in use"
                }
                if selector.selected != before { return "step \(index): a delta frame switched layers" }
            case .keyframe(let ssrc):
                lastPacket[ssrc] = lastPacket[ssrc] ?? now
                known.insert(ssrc)
                let admitted = selector.admit(ssrc: ssrc, isKeyframe: true, pictureSize: sizes[ssrc], now: now)
                if admitted != (selector.selected == ssrc) { return "step \(index): admitted \(admitted), selected \(String(describing: selector.selected))" }
                if let before, before != ssrc, !silent(before),
                   key(sizes[ssrc]!, wanted: wanted) >= key(sizes[before]!, wanted: wanted), admitted {
                    return "step \(index): moved from \(before) to \(ssrc), no better for \(String(describing: wanted))"
                }
                if let best = best(), key(sizes[ssrc]!, wanted: wanted) == best, !silent(ssrc),
                   let selected = selector.selected, key(sizes[selected]!, wanted: wanted) != best {
                    return "step \(index): the best layer's keyframe (\(ssrc)) was not taken; \(selected) stays"
                }
            }
            guard let selected = selector.selected else { continue }
            // What the owner is told to ask for.
            let target = selector.target(now: now)
            if !selector.wantsKeyframes(from: selected, now: now) { return "step \(index): no keyframes wanted from the layer in use" }
            for ssrc in known where ssrc != selected && selector.wantsKeyframes(from: ssrc, now: now) && ssrc != target {
                return "step \(index): keyframes wanted from \(ssrc), neither in use nor the target \(String(describing: target))"
            }
            if let target {
                if target == selected || silent(target) { return "step \(index): target \(target) in use or silent" }
                guard let best = best(), key(sizes[target]!, wanted: wanted) == best else {
                    return "step \(index): target \(target) is not the best layer sending"
                }
            } else if let best = best(), silent(selected) || key(sizes[selected]!, wanted: wanted) > best {
                return "step \(index): \(selected) in use, a better layer sends, and no target"
            }
        }
        return nil
    }

    @Test("generated sequences of packets, keyframes, silences and wanted sizes: the rules hold (seed printed on failure)")
    func generatedSequences() {
        let failure = PropertyCheck.check(seeds: PropertyCheck.seeds(count: 3_000, base: 26_100_000),
                                          generate: Self.generate, property: Self.check)
        #expect(failure == nil, "\(failure.map(String.init(describing:)) ?? "")")
    }
}
