// profile-level-id read as libwebrtc and aiortc read it, which decoder decodes which
// stream, and what an answer says for an offered profile.
import Testing
@testable import WebRTCSignal

struct H264ProfileLevelIDTests {
    @Test("six hex digits in either case; anything else is not a profile-level-id")
    func parsing() {
        #expect(H264ProfileLevelID("42e01f") == H264ProfileLevelID(profileIDC: 0x42, constraintFlags: 0xE0, levelIDC: 0x1F))
        #expect(H264ProfileLevelID("4D401F")?.description == "4d401f")
        #expect(H264ProfileLevelID(profileIDC: 0x42, constraintFlags: 0x00, levelIDC: 0x0A).description == "42000a")
        for bad in ["", "42e01", "42e01f0", "42e0g1", " 42e01f", "42e0 1f", "٤٢e01f", "0x42e0"] {
            #expect(H264ProfileLevelID(bad) == nil, "\(bad)")
        }
    }

    @Test("from an SPS: bytes 1–3 after the NAL header (libx264's main, 1080p)")
    func fromSPS() {
        let sps: [UInt8] = [0x67, 0x4D, 0x40, 0x28, 0xEC, 0xA0, 0x3C, 0x01, 0x13, 0xF2, 0xE0]
        #expect(H264ProfileLevelID(sequenceParameterSet: sps) == H264ProfileLevelID("4d4028"))
        #expect(H264ProfileLevelID(sequenceParameterSet: [0x68, 0x4D, 0x40, 0x28]) == nil, "a PPS")
        #expect(H264ProfileLevelID(sequenceParameterSet: [0x67, 0x4D, 0x40]) == nil)
        #expect(H264ProfileLevelID(sequenceParameterSet: []) == nil)
    }

    @Test("profiles as WebRTC receivers sort them", arguments: [
        ("42e01f", H264Profile.constrainedBaseline), ("42c01f", .constrainedBaseline), ("42401f", .constrainedBaseline),
        ("42f00b", .constrainedBaseline), ("4de01f", .constrainedBaseline), ("58c01f", .constrainedBaseline),
        ("42001f", .baseline), ("42101f", .baseline), ("58801f", .baseline),
        ("4d001f", .main), ("4d401f", .main), ("4d501f", .main),
        ("64001f", .high), ("640c1f", .constrainedHigh), ("f4001f", .predictiveHigh444),
    ])
    func profiles(text: String, profile: H264Profile) {
        #expect(H264ProfileLevelID(text)?.profile == profile)
    }

    @Test("profiles they do not know are nil (never offered back)", arguments: [
        "42e11f", "4d201f", "64081f", "6e001f", "7a001f", "f4101f", "00001f", "4d0f1f",
    ])
    func unknownProfiles(text: String) {
        #expect(H264ProfileLevelID(text)?.profile == nil)
    }

    @Test("levels: Table A-1 through 5.2; 1b as level_idc 11 with constraint_set3, or 9; ordered with 1b between 1 and 1.1")
    func levels() {
        #expect(H264ProfileLevelID("42e01f")?.level?.description == "3.1")
        #expect(H264ProfileLevelID("4d4028")?.level?.description == "4")
        #expect(H264ProfileLevelID("42f00b")?.level == .level1b)
        #expect(H264ProfileLevelID("640009")?.level == .level1b)
        #expect(H264ProfileLevelID("42e00b")?.level == H264Level(levelIDC: 11))
        for idc: UInt8 in [0, 1, 9, 14, 15, 23, 33, 43, 53, 60, 0xFF] {
            #expect(H264Level(levelIDC: idc) == nil, "\(idc)")
        }
        let ordered = [H264Level(levelIDC: 10)!, .level1b, H264Level(levelIDC: 11)!, H264Level(levelIDC: 13)!, H264Level(levelIDC: 20)!,
                       H264Level(levelIDC: 31)!, H264Level(levelIDC: 40)!, H264Level(levelIDC: 52)!]
        #expect(ordered.sorted() == ordered)
        #expect(ordered.map(\.description) == ["1", "1b", "1.1", "1.3", "2", "3.1", "4", "5.2"])
    }

    @Test("which decoder decodes which stream (ITU-T H.264 A.2)")
    func decodes() {
        let all = H264Profile.allCases
        let expected: [H264Profile: Set<H264Profile>] = [
            .constrainedBaseline: Set(all),
            .baseline: [.baseline],
            .main: [.main, .high, .predictiveHigh444],
            .constrainedHigh: [.constrainedHigh, .high, .predictiveHigh444],
            .high: [.high, .predictiveHigh444],
            .predictiveHigh444: [.predictiveHigh444],
        ]
        for stream in all {
            #expect(Set(all.filter { $0.decodes(stream) }) == expected[stream], "\(stream)")
        }
    }

    @Test("the answered profile-level-id: ours for our profile, else the offered profile with our level",
          arguments: [
              ("4d001f", "4d4028", "4d4028"),
              ("42e01f", "42c01f", "42c01f"),
              ("42001f", "42c028", "420028"),
              ("f4001f", "640028", "f40028"),
              ("64001f", "4d4028", "640028"),
              // Our 1b in (Constrained) Baseline or Main is 11 with constraint_set3; the offered flags otherwise.
              ("4d001f", "42f00b", "4d100b"),
              ("42e01f", "42f00b", "42f00b"),
              ("42f00b", "42c01f", "42c01f"),
              ("4d101f", "42c028", "4d0028"),
              // High 1b (level_idc 9, which receivers do not parse) is answered as 1.1.
              ("64001f", "640009", "64000b"),
              ("f4001f", "42f00b", "f4000b"),
          ])
    func answered(offered: String, ours: String, expected: String) {
        let answer = WHEPNegotiator.answered(offered: H264ProfileLevelID(offered)!, ours: H264ProfileLevelID(ours)!)
        #expect(answer.description == expected)
        #expect(answer.profile == H264ProfileLevelID(offered)!.profile, "the offered profile, as the viewer reads it")
        // Our level, or 1.1 for a 1b the offered profile cannot say.
        let ourLevel = H264ProfileLevelID(ours)!.level
        #expect(answer.level == ourLevel || (ourLevel == .level1b && answer.level == H264Level(levelIDC: 11)))
    }
}
